"""Fixtures of the reporting tests."""

from __future__ import annotations

import pytest

from tests.reporting.browser import chromium


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium per test module (tests/reporting/browser.py)."""
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as ctx:
        yield ctx
