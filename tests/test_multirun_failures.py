"""A Hydra multirun goes on after a job that fails validation, and lists the failures at the end;
``multirun_fail_fast=true`` stops at the first."""

from __future__ import annotations

import pytest

from tests.cli import xlt

FAST = ["+recipe=demo_tiny", "stages=[build_data]", "data.sources.race.max_rows=20", "data.sources.sciq.max_rows=20"]


@pytest.mark.slow  # over 10 s of full runs through the CLI: the slow tier, docs/testing.md
def test_a_failed_job_is_reported_and_the_rest_still_run(tmp_path):
    proc = xlt("xlt.train", "-m", *FAST, "seed=1,-1,2", f"run_root={tmp_path}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    built = sorted(p.parent.parent.name for p in tmp_path.glob("demo_tiny/*/stages/build_data.json"))
    assert len(built) == 2 and all("seed=-1" not in b for b in built), built
    assert "1 job(s) of the multirun failed" in proc.stderr and "seed=-1 is out of range" in proc.stderr
    assert "The sweep goes on with the next job" in proc.stderr


def test_fail_fast_stops_at_the_first_failure(tmp_path):
    proc = xlt("xlt.train", "-m", *FAST, "seed=-1,1", "multirun_fail_fast=true", f"run_root={tmp_path}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "seed=-1 is out of range" in proc.stderr
    assert not list(tmp_path.glob("demo_tiny/*/stages/build_data.json"))
