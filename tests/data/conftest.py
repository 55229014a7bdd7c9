"""Fixtures for the training-set tests: the upstream-schema writers and a small build context."""

from __future__ import annotations

import pytest

from tests.fixtures.sources import upstream as up


@pytest.fixture
def upstream():
    """The upstream-schema writers (tests/fixtures/sources/upstream.py)."""
    return up


@pytest.fixture
def ctx():
    from xlt.data.sources import BuildContext

    return BuildContext(seed=7, max_passage_sentences=25)
