"""xlt.contract: the same bundled files read from another copy of xlt (another checkout, another virtual
environment) are the same inputs; an edit of one of them is a change."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from xlt.config.compose import compose
from xlt.contract import context, stale_reason
from xlt.run.layout import RunDir
from xlt.stages import STAGES

PACKAGE = Path(__file__).resolve().parent.parent / "xlt"
CHECK = """
import json, sys
import xlt
from xlt.config.compose import compose
from xlt.contract import context, stale_reason
from xlt.run.layout import RunDir
from xlt.stages import STAGES
cfg = compose(None, ["+recipe=demo_tiny"])
run = RunDir(sys.argv[1])
why = stale_reason(run, STAGES["build_data"], context(cfg, run, STAGES["build_data"], force=False, table=STAGES))
print(json.dumps({"package": xlt.__file__, "path": cfg.data.sources.race.path, "why": why}))
"""


def _check(copy: Path, run: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(copy), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", CHECK, str(run)], env=env, capture_output=True, text=True,
                         check=True, cwd=copy).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_a_run_read_by_another_copy_of_xlt_is_done_and_an_edited_bundled_file_is_a_change(tmp_path):
    cfg = compose(None, ["+recipe=demo_tiny"])
    run = RunDir(tmp_path / "run")
    spec = STAGES["build_data"]
    for out in spec.outputs:
        (run.path / out).parent.mkdir(parents=True, exist_ok=True)
        (run.path / out).mkdir() if not Path(out).suffix else (run.path / out).write_text("{}")
    ctx = context(cfg, run, spec, force=False, table=STAGES)
    run.mark_done("build_data", {"provenance": {"inputs": ctx.inputs, "detail": ctx.detail, "output_id": "a"}})
    assert stale_reason(run, spec, ctx) is None
    copy = tmp_path / "elsewhere"
    shutil.copytree(PACKAGE, copy / "xlt", ignore=shutil.ignore_patterns("__pycache__"))
    got = _check(copy, run.path)
    assert got["package"] == str(copy / "xlt" / "__init__.py"), got  # the other copy answered
    assert got["path"].startswith(str(copy / "xlt")) and got["path"] != cfg.data.sources.race.path, got
    assert got["why"] is None, got
    race = next(p for p in sorted((copy / "xlt" / "assets" / "demo" / "race").rglob("*")) if p.is_file())
    race.write_bytes(race.read_bytes() + b"\n")  # the same path, other content: a change
    got = _check(copy, run.path)
    assert got["why"] is not None and "file data.sources.race" in got["why"], got
