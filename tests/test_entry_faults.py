"""Faults a user meets at the entry points: a launcher already dead when a worker starts, a run-directory
path pasted back unquoted (Hydra's grammar reads its ``=`` and ``,``), a source file the OS cannot open."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

from tests.cli import ENV, REPO, xlt

# A worker whose launcher is gone by the time it asks for PR_SET_PDEATHSIG: die_with_launcher() sends the
# process a TERM at once (here: always, whatever the parent), before the run directory is even known.
DEAD_LAUNCHER = """
import os, signal, sys
import xlt.cli
xlt.cli.die_with_launcher = lambda: os.kill(os.getpid(), signal.SIGTERM)
from xlt.train import main
sys.argv = ["xlt.train", "+recipe=demo_tiny", "run_root=" + sys.argv[1]]
main()
"""


def test_a_launcher_dead_at_start_up_stops_the_worker_without_a_preemption(tmp_path):
    """A launcher gone at start-up (killed by the OOM killer, say): the worker's TERM stops it at once, and it
    is no preemption (no notice from slurm/common.sh, no USR1): exit 143, no record, so no requeue. With the
    notice it is one (exit 75): tests/test_requeue.py in-process, tests/training/test_fault_matrix.py with
    real launchers."""
    env = {**ENV, "WORLD_SIZE": "2", "RANK": "1", "LOCAL_RANK": "1", "PYTHONPATH": str(REPO),
           "XLT_PREEMPTION_NOTICE": str(tmp_path / "no-notice"), "XLT_PREEMPTION_RECORD": str(tmp_path / "record")}
    proc = subprocess.run([sys.executable, "-c", DEAD_LAUNCHER, str(tmp_path)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 143, proc.stderr[-3000:]
    assert "xlt: stopped (SIGTERM received); not under SLURM: not a preemption" in proc.stderr, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "record").exists()


RUN_PATH = "runs/demo/model.max_length=128,seed=1,training.max_steps=30-1a2b3c4d5e/model"


def test_an_unquoted_run_directory_path_gets_the_quoted_form_to_type():
    proc = xlt("xlt.evaluate", "+recipe=demo_tiny", f"eval.model={RUN_PATH}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "mismatched input" in proc.stderr  # Hydra's reason, inside xlt's message
    quoted = f"\"eval.model='{RUN_PATH}'\""
    assert f"xlt: error: the override 'eval.model={RUN_PATH}' cannot be parsed" in proc.stderr
    assert quoted in proc.stderr
    # What the message says to type, typed in a shell, is what Hydra parses back to the path.
    from hydra.core.override_parser.overrides_parser import OverridesParser

    [typed] = shlex.split(quoted)
    assert OverridesParser.create().parse_overrides([typed])[0].value() == RUN_PATH


def test_the_log_gives_a_trained_models_path_in_the_form_to_paste_back():
    from xlt.config.overrides import override_form

    assert override_form("eval.model", RUN_PATH) == f"\"eval.model='{RUN_PATH}'\""
    assert override_form("eval.model", "runs/plain/model") == "eval.model=runs/plain/model"
    odd = "runs/it's $HOME, x=1"
    [typed] = shlex.split(override_form("eval.model", odd))
    from hydra.core.override_parser.overrides_parser import OverridesParser

    assert OverridesParser.create().parse_overrides([typed])[0].value() == odd


def test_a_source_file_in_a_symbolic_link_loop_is_named(tmp_path):
    copy = tmp_path / "race"
    copy.mkdir()
    for name in ("train.jsonl", "validation.jsonl"):
        os.symlink(REPO / "xlt" / "assets" / "demo" / "race" / name, copy / name)
    loop = copy / "extra.jsonl"
    os.symlink(loop, loop)
    proc = xlt("xlt.build_data", "+recipe=demo_tiny", f"run_root={tmp_path / 'runs'}", f"data.sources.race.path={copy}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert f"xlt: error: {loop}: cannot be read (Too many levels of symbolic links)" in proc.stderr
