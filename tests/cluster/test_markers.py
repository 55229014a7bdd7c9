""".ci/run collects the real schedulers' tests (``-m slurm``, ``-m gridengine``) from tests/cluster/ alone: a test
with either marker anywhere else would never run in CI, so none may be there."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"\bmark\.(slurm|gridengine)\b")


def test_scheduler_marked_tests_live_in_tests_cluster():
    outside = [str(p.relative_to(TESTS)) for p in TESTS.rglob("*.py")
               if p.parent != TESTS / "cluster" and MARKER.search(p.read_text(encoding="utf-8"))]
    assert outside == [], f"marked slurm/gridengine outside tests/cluster/ (.ci/run would not collect them): {outside}"
    run = (TESTS.parent / ".ci" / "run").read_text(encoding="utf-8")
    for marker in ("slurm", "gridengine"):
        assert f"pytest -q -m {marker} tests/cluster " in run
