"""xlt/startup.py: every entry point runs with full garbage collections a tenth as often (the first two thresholds
as CPython set them); importing xlt as a library leaves the collector alone. Fresh interpreters: this test
process's own thresholds are the conftest's."""

from __future__ import annotations

import json
import subprocess
import sys

from xlt.startup import FULL_COLLECTION_EVERY

PROBE = "import gc, json; before = gc.get_threshold(); import {modules}; print(json.dumps([before, gc.get_threshold()]))"


def _thresholds(modules: str) -> tuple[list[int], list[int]]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(modules=modules)], capture_output=True, text=True,
                         check=True).stdout
    before, after = json.loads(out)
    return before, after


def test_every_entry_point_collects_the_oldest_generation_less_often():
    for entry in ("xlt.train", "xlt.finetune", "xlt.evaluate", "xlt.__main__"):
        before, after = _thresholds(entry)
        assert after == [before[0], before[1], FULL_COLLECTION_EVERY], (entry, before, after)
        assert FULL_COLLECTION_EVERY > before[2]


def test_the_library_leaves_the_collector_as_it_was():
    before, after = _thresholds("xlt, xlt.config, xlt.run.layout, xlt.data.schema, xlt.scoring.mc")
    assert after == before
