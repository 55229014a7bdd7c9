"""`python -m xlt.translate` through Hydra, and units whose rows are all dropped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from datasets import load_from_disk

from tests.translation.conftest import make_cfg, make_train_set
from xlt.errors import DataError
from xlt.stages import call_stage
from xlt.stages import translate as stage
from xlt.translation.dataset import translate_dataset
from xlt.translation.engines.base import Translator

ROOT = Path(__file__).resolve().parents[2]


def test_cli_translate_stage(tmp_path):
    run_dir = tmp_path / "runs" / "demo_tiny" / "translate=echo"
    make_train_set(6, 2).save_to_disk(str(run_dir / "data" / "train_set"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
    cmd = [sys.executable, "-m", "xlt.translate", "+recipe=demo_tiny", "translate=echo", f"run_root={tmp_path / 'runs'}"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    marker = json.loads((run_dir / "stages" / "translate.json").read_text())
    assert marker["rows"]["fra_Latn"] == {"train": 6, "dev": 2}
    assert load_from_disk(str(run_dir / "data" / "translated" / "deu_Latn"))["train"][0]["language"] == "deu_Latn"
    # A bad language is a clear error with exit status 2, not a traceback.
    bad = subprocess.run(cmd + ["translate.languages=[french]", "force=true"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "not FLORES-200 codes" in bad.stderr


class Collapse(Translator):
    """Maps every option to the same text: every row loses its distinct options."""

    identity = "collapse"

    def _generate(self, texts, src, tgt):
        return ["same" if t.startswith(("Answer", "None")) else t for t in texts]


def test_unit_with_all_rows_dropped(run, monkeypatch):
    monkeypatch.setattr(stage, "build_translator", lambda tcfg: Collapse())
    # A language that keeps no row is an error (it would silently vanish from translate-train-all); the
    # report that says why is written first.
    with pytest.raises(DataError, match=r"kept 0 training rows for fra_Latn.*translation_report"):
        call_stage("translate", make_cfg(languages=["fra_Latn"]), run)
    report = json.loads((run.data / "translation_report.json").read_text())
    counts = report["languages"]["fra_Latn"]["counts"]
    assert counts["dropped_duplicate_options"] == 19 and counts["rows_out"] == 0
    assert report["languages"]["fra_Latn"]["keep_rate"] == 0.0
    res = translate_dataset(make_train_set(2, 1)["train"], Collapse(), None, "eng_Latn", "fra_Latn")
    assert res.dataset.num_rows == 0


def test_low_keep_rate_is_a_warning_in_the_report(run):
    from collections import Counter

    from xlt.translation.quality import QualityStats

    def stats(n_in: int, n_out: int) -> QualityStats:
        return QualityStats(Counter(rows_in=n_in, rows_out=n_out))

    per_language = {"fra_Latn": {"train": stats(100, 98), "dev": stats(10, 10)},
                    "deu_Latn": {"train": stats(100, 50), "dev": stats(10, 5)}}
    report = stage.write_report(run, {"translator": "t", "source_language": "eng_Latn"}, per_language)
    assert report["languages"]["fra_Latn"]["keep_rate"] == pytest.approx(108 / 110)
    (warning,) = report["warnings"]
    assert warning.startswith("deu_Latn: only 50.0% of the rows were kept (train 50/100, dev 5/10)")
    assert f"**Warning:** {warning}" in (run.data / "translation_report.md").read_text()
