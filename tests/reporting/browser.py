"""Headless Chromium for the page tests: Debian's ``chromium`` driven by playwright through
``executable_path`` (playwright's own browser download is never used), a fresh profile, no network."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextlib.contextmanager
def chromium(profile: Path):
    """A headless Chromium browser context with a fresh profile in ``profile``; skips (fails in CI) without one."""
    if CHROMIUM is None:
        if os.environ.get("CI"):  # .ci/run installs it: a missing browser there is a failure, not a skip
            pytest.fail("chromium is not installed in CI (.ci/run installs Debian's chromium)")
        pytest.skip("chromium is not installed (apt-get install -y chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
    with sync_api.sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(str(profile), executable_path=CHROMIUM, headless=True, args=ARGS,
                                                   viewport={"width": 1280, "height": 860}, offline=True)
        yield ctx
        ctx.close()


def open_page(browser, path: Path):
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: problems.append(f"request: {r.url}") if not r.url.startswith(("file:", "data:")) else None)
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    return page, problems


def first_column(page, table: str, column: int = 0) -> list[str]:
    return page.eval_on_selector_all(f"table[data-table='{table}'] tbody tr",
                                     f"rows => rows.map(r => r.cells[{column}].textContent)")


