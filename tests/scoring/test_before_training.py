"""The pass before fine-tuning (``eval.before_training``) as a first-class output of the evaluate stage (issue 40):
it scores translate-test and xlt-made machine-translated entries on the same translated items as the trained
model, and its ``eval_before/`` results are checked, recomputed when missing or damaged, and counted in
"every shard done" like the ``eval/`` ones.

The scorers are recording stand-ins (the gold scorer), so no model is trained or loaded: what is under test is
the stage's bookkeeping, not a model's accuracy (the real tiny model's before pass: tests/test_cli.py)."""

from __future__ import annotations

import json
import logging

import pytest

from tests.fixtures.benchmarks import write_belebele, write_global_mmlu
from xlt import config as xcfg
from xlt.errors import DataError
from xlt.reporting.tables import collect
from xlt.run.layout import RunDir
from xlt.scoring import before
from xlt.scoring.scorers import GoldScorer
from xlt.stages import call_stage, context, run_stages
from xlt.stages import evaluate as eval_stage
from xlt.stages import train as train_stage


class Recording(GoldScorer):
    """The gold scorer, remembering the passages and questions of every item it scored, per job."""

    def __init__(self):
        super().__init__()
        self.seen: dict[tuple[str, str], list[tuple[str, str]]] = {}

    def score(self, items, *, benchmark, language):
        self.seen[(benchmark, language)] = list(zip(items["passage"], items["question"], strict=True))
        return super().score(items, benchmark=benchmark, language=language)


@pytest.fixture
def scorers(monkeypatch):
    """(trained, untrained) recording scorers in place of the run's model and the model before fine-tuning."""
    trained, untrained = Recording(), Recording()
    monkeypatch.setattr(eval_stage, "check_model", lambda run: None)
    monkeypatch.setattr(eval_stage, "build_scorer", lambda cfg, run: trained)
    monkeypatch.setattr(before, "scorer", lambda model, eval_cfg, seed: untrained)
    return trained, untrained


def _cfg(tmp_path, translated: bool = True, **eval_extra):
    """A translate-test entry and an xlt-made machine-translated one (``translated``), or the same entries
    in-language."""
    bele = write_belebele(tmp_path / "bele", ["fra_Latn", "eng_Latn"], n=6)
    gm = write_global_mmlu(tmp_path / "gm", ["en", "de"], n=6)
    return xcfg.validate({
        "model": {"name": "tiny", "name_or_path": "xlt-tiny"},
        "translate": {"kind": "echo"},
        "eval": {"scorer": "mc", "model": "run", "before_training": True, "bootstrap_samples": 20, **eval_extra,
                 "benchmarks": {
                     "belebele_tt": {"kind": "belebele", "path": str(bele), "translate_test": translated},
                     "gm_mt": {"kind": "global_mmlu", "path": str(gm), "languages": ["de"],
                               **({"machine_translate_from": "en"} if translated else {})},
                 }},
    }, stages=["evaluate"])


def test_before_training_scores_the_same_translated_items(tmp_path, scorers):
    """It crashed: the untrained pass called evaluate_job(..., translate_test=None) -> TypeError."""
    trained, untrained = scorers
    run = RunDir(tmp_path / "run")
    summary = call_stage("evaluate", _cfg(tmp_path), run)
    assert summary is not None and set(summary) == {"belebele_tt", "gm_mt"}
    assert set(untrained.seen) == set(trained.seen) == {("belebele_tt", "eng_Latn"), ("belebele_tt", "fra_Latn"),
                                                        ("gm_mt", "de")}
    for key, items in trained.seen.items():
        assert untrained.seen[key] == items, key  # the same (translated) items, item by item
    assert all(p.startswith("[eng_Latn] ") and q.startswith("[eng_Latn] ")
               for p, q in untrained.seen[("belebele_tt", "fra_Latn")])
    assert all(q.startswith("[deu_Latn] ") for _, q in untrained.seen[("gm_mt", "de")])
    res = json.loads((run.path / "eval_before" / "belebele_tt" / "fra_Latn.json").read_text())
    assert res["translate_test"] is True and res["provenance"]["model"].startswith("untrained:")
    assert res["provenance"]["translator"] == {"kind": "echo"}
    mt = json.loads((run.path / "eval_before" / "gm_mt" / "de.json").read_text())
    assert mt["machine_translated_from"] == "en"


@pytest.mark.parametrize(("damage", "translated"), [("deleted", False), ("truncated", False),
                                                    ("predictions deleted", False), ("deleted", True)])
def test_a_missing_or_damaged_eval_before_result_reruns_the_stage(tmp_path, scorers, caplog, damage, translated):
    """The evaluate stage's check covers eval_before/: a done stage with one such result damaged is not "up to
    date"; the rerun recomputes exactly it, and the report reads it (it silently dropped it before)."""
    trained, untrained = scorers
    cfg, run = _cfg(tmp_path, translated), RunDir(tmp_path / "run")
    assert run_stages(cfg, run, ["evaluate"]) == ["evaluate"]
    assert run_stages(cfg, run, ["evaluate"]) == []  # up to date
    target = run.path / "eval_before" / "belebele_tt" / "fra_Latn.json"
    other = run.path / "eval_before" / "belebele_tt" / "eng_Latn.json"
    keep = other.stat().st_mtime_ns
    ctx = context(cfg, run, "evaluate")
    assert eval_stage.check(cfg, run, ctx) == []
    if damage == "deleted":
        target.unlink()
    elif damage == "truncated":
        target.write_text(target.read_text()[:40])
    else:
        (target.parent / "predictions" / "fra_Latn.jsonl").unlink()
    problems = eval_stage.check(cfg, run, ctx)
    assert len(problems) == 1 and problems[0].startswith("eval_before/belebele_tt/fra_Latn.json"), problems
    with pytest.raises(DataError, match=r"eval_before/belebele_tt/fra_Latn.json .*rerun the evaluate stage"):
        collect(cfg.eval, cfg.model, run, ctx, train_stage.STAGE.files(cfg, run), seed=cfg.seed)
    untrained.seen.clear()
    with caplog.at_level(logging.INFO):
        assert run_stages(cfg, run, ["evaluate"]) == ["evaluate"]  # it was "up to date"
    assert "eval_before/belebele_tt/fra_Latn.json" in caplog.text
    assert list(untrained.seen) == [("belebele_tt", "fra_Latn")]  # exactly the damaged one
    assert other.stat().st_mtime_ns == keep and eval_stage.check(cfg, run, ctx) == []
    numbers = collect(cfg.eval, cfg.model, run, ctx, train_stage.STAGE.files(cfg, run), seed=cfg.seed)
    assert before.COLUMN in numbers["belebele_tt"].per_language


def test_every_shard_done_counts_the_results_before_fine_tuning(tmp_path, scorers, monkeypatch):
    """The stage is done (returns its summary) only when every shard's results exist, eval_before/ included:
    a shard whose untrained pass was lost leaves the stage not done, and the shard's rerun completes it."""
    cfg0 = _cfg(tmp_path, translated=False, num_shards=2, shard_index=0)
    cfg1 = _cfg(tmp_path, translated=False, num_shards=2, shard_index=1)
    run = RunDir(tmp_path / "run")
    real = eval_stage.score_jobs

    def trained_pass_only(cfg, view, ctx, jobs, mine, *rest, **kw):  # shard 0 dies before its untrained pass
        return real(cfg, view, ctx, jobs, [] if view.eval == run.before_training().eval else mine, *rest, **kw)

    monkeypatch.setattr(eval_stage, "score_jobs", trained_pass_only)
    assert call_stage("evaluate", cfg0, run) is None
    monkeypatch.setattr(eval_stage, "score_jobs", real)
    # shard 1: its own jobs are all done, both passes; shard 0's untrained results are not: not done
    assert call_stage("evaluate", cfg1, run) is None
    assert call_stage("evaluate", cfg0, run) is not None  # shard 0 rerun: everything there now
