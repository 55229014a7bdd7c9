"""The multirun summary callback: sweep expansion and the runs it compares."""

from __future__ import annotations

from xlt.reporting.multirun import expand_sweep
from xlt.run.layout import run_name


def test_sweep_expands_like_hydras_basic_sweeper():
    jobs = expand_sweep(["+recipe=demo_tiny", "seed=1,2,3", "training.learning_rate=1e-5,2e-5"])
    assert len(jobs) == 6
    # Values are normalised as Hydra's sweeper writes them into each job's overrides (1e-5 -> 1e-05).
    assert ["+recipe=demo_tiny", "seed=1", "training.learning_rate=1e-05"] in jobs
    names = {run_name(j) for j in jobs}
    assert "demo_tiny/seed=3,training.learning_rate=2e-05" in names and len(names) == 6


def test_no_sweep_is_one_job():
    assert expand_sweep(["+recipe=demo_tiny", "seed=4"]) == [["+recipe=demo_tiny", "seed=4"]]
