"""xlt's progress bars honour TQDM_DISABLE, which tqdm itself ignores once a bar sets disable=."""

from __future__ import annotations

import re

from tests.test_layers import ROOT
from xlt.progress import progress_bar


def test_tqdm_disable_silences_every_bar(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    with progress_bar(total=3, disable=False) as bar:
        assert not bar.disable
    with progress_bar(total=3, disable=True) as bar:
        assert bar.disable
    for value, off in (("1", True), ("true", True), ("0", False), ("", False)):
        monkeypatch.setenv("TQDM_DISABLE", value)
        with progress_bar(total=3, disable=False) as bar:
            assert bar.disable is off, value


def test_xlt_makes_its_bars_with_progress_bar():
    direct = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
              if p.name != "progress.py" and re.search(r"\btqdm\(", p.read_text())]
    assert direct == []
