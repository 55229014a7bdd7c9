"""Translate-test in the evaluate stage, and stale results being recomputed when settings change."""

from __future__ import annotations

import json

from omegaconf import OmegaConf

from tests.fixtures.benchmarks import write_belebele
from xlt import config as xcfg
from xlt.run.layout import RunDir
from xlt.stages import call_stage
from xlt.stages import evaluate as eval_stage


def _cfg(data, **bench):
    cfg = xcfg.validate({
        "translate": {"kind": "echo"},
        "eval": {"scorer": "gold", "bootstrap_samples": 50, "benchmarks": {
            "belebele_tt": {"kind": "belebele", "path": str(data), "translate_test": True, **bench},
        }},
    })
    return cfg


def test_translate_test_translates_items_before_scoring(tmp_path):
    write_belebele(tmp_path / "bele", ["fra_Latn", "eng_Latn"], n=6)
    run = RunDir(tmp_path / "run")
    summary = call_stage("evaluate", _cfg(tmp_path / "bele"), run)
    assert summary["belebele_tt"]["n_languages"] == 2
    res = json.loads((run.eval / "belebele_tt" / "fra_Latn.json").read_text())
    assert res["translate_test"] is True and res["n"] == 6 and res["accuracy"] == 100.0
    # The echo translator was used for French (6 passages' sentences, questions and options) ...
    quality = json.loads((run.data / "translate_test" / "belebele_tt" / "fra_Latn.json").read_text())
    assert quality["target"] == "eng_Latn" and "echo" in json.dumps(quality["translator"])
    # ... and English items are left as they are (nothing to translate).
    quality_en = json.loads((run.data / "translate_test" / "belebele_tt" / "eng_Latn.json").read_text())
    assert quality_en["target"] == "eng_Latn"


def test_changed_settings_recompute_stale_results(tmp_path):
    write_belebele(tmp_path / "bele", ["fra_Latn"], n=8)
    run = RunDir(tmp_path / "run")
    cfg = _cfg(tmp_path / "bele", translate_test=False)
    call_stage("evaluate", cfg, run)
    first = json.loads((run.eval / "belebele_tt" / "fra_Latn.json").read_text())
    assert first["n"] == 8
    OmegaConf.update(cfg, "eval.benchmarks.belebele_tt.max_questions", 3)
    call_stage("evaluate", cfg, run)
    second = json.loads((run.eval / "belebele_tt" / "fra_Latn.json").read_text())
    assert second["n"] == 3 and second["settings"]["max_questions"] == 3


def test_rows_without_finite_scores_count_as_wrong(tmp_path, monkeypatch):
    """An LLM answer naming no option (all -inf) must not become option A."""
    import numpy as np

    write_belebele(tmp_path / "bele", ["fra_Latn"], n=8)

    class NoAnswer:
        def score(self, items, *, benchmark, language):
            return np.full((len(items), 4), -np.inf)

    monkeypatch.setattr(eval_stage, "build_scorer", lambda cfg, run: NoAnswer())
    run = RunDir(tmp_path / "run")
    call_stage("evaluate", _cfg(tmp_path / "bele", translate_test=False), run)
    res = json.loads((run.eval / "belebele_tt" / "fra_Latn.json").read_text())
    assert res["accuracy"] == 0.0
    preds = [json.loads(x) for x in (run.eval / "belebele_tt" / "predictions" / "fra_Latn.jsonl").read_text().splitlines()]
    assert all(p["prediction"] == -1 for p in preds)
