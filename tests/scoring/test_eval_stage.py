"""The evaluate stage on fixtures: per-language results, resume, shards, errors (gold/fixed scorers)."""

from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from tests.fixtures.benchmarks import (
    belebele_gold,
    gmmlu_cs_label,
    gmmlu_gold,
    write_belebele,
    write_global_mmlu,
)
from xlt import config as xcfg
from xlt.errors import ConfigError, DataError
from xlt.run.layout import RunDir
from xlt.scoring.jobs import plan_jobs, shard_jobs
from xlt.stages import call_stage
from xlt.stages import evaluate as eval_stage

BELEBELE_LANGS = ["arb_Arab", "deu_Latn", "fra_Latn", "zho_Hans"]
GMMLU_LANGS = ["de", "sw", "zh"]


@pytest.fixture
def data(tmp_path):
    write_belebele(tmp_path / "belebele", BELEBELE_LANGS, n=8)
    write_global_mmlu(tmp_path / "gmmlu", GMMLU_LANGS, n=12)
    return tmp_path


def make_cfg(data, **eval_kw):
    cfg = xcfg.validate({"eval": {"bootstrap_samples": 200, "benchmarks": {
        "belebele": {"kind": "belebele", "path": str(data / "belebele")},
        "global_mmlu": {"kind": "global_mmlu", "path": str(data / "gmmlu")},
    }}})
    for k, v in eval_kw.items():
        OmegaConf.update(cfg, f"eval.{k}", v, merge=False)
    return xcfg.validate(cfg)


def test_gold_scorer_all_right_with_predictions(data, tmp_path):
    run = RunDir(tmp_path / "run")
    summary = call_stage("evaluate", make_cfg(data, scorer="gold"), run)
    assert summary["belebele"]["n_languages"] == 4 and summary["belebele"]["mean_accuracy"] == 100.0
    assert summary["global_mmlu"]["n_questions"] == 36
    res = json.loads((run.eval / "belebele" / "zho_Hans.json").read_text())
    assert res["accuracy"] == 100.0 and res["n"] == 8 and res["ci_low"] == res["ci_high"] == 100.0
    preds = [json.loads(x) for x in (run.eval / "belebele" / "predictions" / "zho_Hans.jsonl").read_text().splitlines()]
    assert [p["gold"] for p in preds] == [belebele_gold(i) for i in range(8)]
    assert all(p["prediction"] == p["gold"] and len(p["scores"]) == 4 for p in preds)
    assert preds[0]["id"] == "https://en.wikibooks.org/wiki/Doc_0#1" and preds[0]["language"] == "zho_Hans"


def test_fixed_scorer_known_accuracy_and_subsets(data, tmp_path):
    run = RunDir(tmp_path / "run")
    call_stage("evaluate", make_cfg(data, scorer="fixed", fixed_option=2), run)
    # Belebele gold = (7i+2) % 4 for i in 0..7 -> [2,1,0,3,2,1,0,3]: option 2 right twice of 8.
    res = json.loads((run.eval / "belebele" / "arb_Arab.json").read_text())
    assert res["correct"] == 2 and res["accuracy"] == 25.0 and res["code"] == "arb_Arab"
    assert res["ci_low"] <= 25.0 <= res["ci_high"]
    # Global-MMLU gold = (3i+1) % 4 for i in 0..11 -> [1,0,3,2,1,0,3,2,1,0,3,2]: option 2 at i=3,7,11.
    g = json.loads((run.eval / "global_mmlu" / "sw.json").read_text())
    assert g["correct"] == 3 and g["accuracy"] == 25.0 and g["code"] == "swh_Latn"
    sub = g["subsets"]
    # CS: i%4==0 -> i=0,4,8 (none right); CA: i%4 in (1,3) -> i=1,3,5,7,9,11 (3,7,11 right).
    assert sub["CS"]["n"] == 3 and sub["CS"]["accuracy"] == 0.0
    assert sub["CA"]["n"] == 6 and sub["CA"]["accuracy"] == 50.0
    assert sub["MA"]["n"] == 9 and sub["MA"]["correct"] == 3
    # categories cycle with i%6: i=3 -> Medical, 7 -> Humanities, 11 -> Other
    assert sub["category/Medical"] == {**sub["category/Medical"], "n": 2, "correct": 1, "accuracy": 50.0}
    assert sub["category/STEM"]["accuracy"] == 0.0
    # each prediction names its item's subsets (what the findings' bootstrap over questions resamples)
    preds = [json.loads(x) for x in (run.eval / "global_mmlu" / "predictions" / "sw.jsonl").read_text().splitlines()]
    assert [("CS" in p["subsets"], "CA" in p["subsets"], "MA" in p["subsets"]) for p in preds[:3]] == [
        (True, False, True), (False, True, True), (False, False, False)]
    assert sum("CA" in p["subsets"] for p in preds) == 6 and "full" not in preds[0]["subsets"]
    b = [json.loads(x) for x in (run.eval / "belebele" / "predictions" / "arb_Arab.jsonl").read_text().splitlines()]
    assert "subsets" not in b[0]  # Belebele has no subsets of its own
    assert sum(gmmlu_cs_label(i) == "CS" and gmmlu_gold(i) == 2 for i in range(12)) == 0


def test_resume_skips_finished_languages(data, tmp_path, monkeypatch):
    run = RunDir(tmp_path / "run")
    cfg = make_cfg(data, scorer="gold")
    calls = []
    real = eval_stage.evaluate_job

    def crash_after_two(cfg_, run_, job, *rest):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(job)
        return real(cfg_, run_, job, *rest)

    monkeypatch.setattr(eval_stage, "evaluate_job", crash_after_two)
    with pytest.raises(KeyboardInterrupt):
        call_stage("evaluate", cfg, run)
    done = sorted(p.name for p in (run.eval / "belebele").glob("*.json") if p.name != "plan.json")
    assert done == ["arb_Arab.json", "deu_Latn.json"]
    assert not list(run.eval.rglob("*.tmp"))
    first = (run.eval / "belebele" / "arb_Arab.json").stat().st_mtime_ns
    seen = []
    monkeypatch.setattr(eval_stage, "evaluate_job", lambda c, r, j, *a: seen.append(j) or real(c, r, j, *a))
    summary = call_stage("evaluate", cfg, run)
    assert len(seen) == 5 and ("belebele", "arb_Arab") not in [(j.benchmark, j.language) for j in seen]
    assert (run.eval / "belebele" / "arb_Arab.json").stat().st_mtime_ns == first
    assert summary["belebele"]["n_languages"] == 4


def test_shards_then_merge_equal_one_run(data, tmp_path):
    one = RunDir(tmp_path / "one")
    full = call_stage("evaluate", make_cfg(data, scorer="fixed", fixed_option=1), one)
    sharded = RunDir(tmp_path / "sharded")
    assert call_stage("evaluate", make_cfg(data, scorer="fixed", fixed_option=1, num_shards=3, shard_index=0), sharded) is None
    assert call_stage("evaluate", make_cfg(data, scorer="fixed", fixed_option=1, num_shards=3, shard_index=2), sharded) is None
    last = call_stage("evaluate", make_cfg(data, scorer="fixed", fixed_option=1, num_shards=3, shard_index=1), sharded)
    assert last == full
    for path in sorted(one.eval.rglob("*.json*")):
        assert path.read_text() == (sharded.path / path.relative_to(one.path)).read_text(), path


def test_shard_split_is_deterministic_partition():
    jobs = [("b", f"l{i}") for i in range(7)]  # any sortable job keys
    parts = [shard_jobs(list(reversed(jobs)), i, 3) for i in range(3)]
    assert sorted(j for p in parts for j in p) == sorted(jobs)
    assert parts[0] == [jobs[0], jobs[3], jobs[6]]
    with pytest.raises(ValueError, match="shard 3 of 3"):
        shard_jobs(jobs, 3, 3)


def test_language_subset_and_errors(data, tmp_path):
    cfg = make_cfg(data, scorer="gold")
    cfg.eval.benchmarks.belebele.languages = ["fra_Latn", "zho_Hans"]
    cfg.eval.benchmarks.global_mmlu.languages = ["swh_Latn"]
    jobs = plan_jobs(cfg.eval)
    assert [(j.benchmark, j.language) for j in jobs] == [
        ("belebele", "fra_Latn"), ("belebele", "zho_Hans"), ("global_mmlu", "sw")]
    cfg.eval.benchmarks.belebele.languages = ["fra_latm"]
    with pytest.raises(ConfigError, match="did you mean 'fra_Latn'"):
        call_stage("evaluate", cfg, RunDir(tmp_path / "bad"))
    cfg.eval.benchmarks.belebele.enabled = False
    cfg.eval.benchmarks.global_mmlu.enabled = False
    with pytest.raises(ConfigError, match="empty benchmark selection"):
        call_stage("evaluate", cfg, RunDir(tmp_path / "bad"))
    with pytest.raises(ConfigError, match="eval.scorer='nope' is not allowed; use one of mc, gold, fixed, llm"):
        call_stage("evaluate", make_cfg(data, scorer="nope"), RunDir(tmp_path / "bad2"))


def test_bad_row_leaves_nothing_half_written(data, tmp_path):
    path = data / "belebele" / "data" / "deu_Latn.jsonl"
    lines = path.read_text().splitlines()
    row = json.loads(lines[4])
    row["correct_answer_num"] = "E"
    lines[4] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    run = RunDir(tmp_path / "run")
    with pytest.raises(DataError, match=r"deu_Latn.jsonl: row 5: field 'correct_answer_num'"):
        call_stage("evaluate", make_cfg(data, scorer="gold"), run)
    assert not (run.eval / "belebele" / "deu_Latn.json").exists()
    assert not (run.eval / "belebele" / "predictions" / "deu_Latn.jsonl").exists()
    assert not list(run.eval.rglob("*.tmp"))


def test_bumping_a_benchmark_version_recomputes_exactly_its_results(data, tmp_path, monkeypatch):
    """A definition's ``version`` is in every result's job hash: bumping it recomputes that benchmark only."""
    from xlt.data.benchmarks import BENCHMARKS

    run = RunDir(tmp_path / "run")
    cfg = make_cfg(data, scorer="gold")
    call_stage("evaluate", cfg, run)
    before = {p: p.stat().st_mtime_ns for p in run.eval.glob("*/*.json") if p.name != "plan.json"}
    real = eval_stage.evaluate_job
    seen = []
    monkeypatch.setattr(eval_stage, "evaluate_job", lambda c, r, j, *a: seen.append(j) or real(c, r, j, *a))
    call_stage("evaluate", cfg, run)
    assert seen == []  # nothing changed: everything reused

    monkeypatch.setattr(BENCHMARKS["global_mmlu"], "version", BENCHMARKS["global_mmlu"].version + 1)
    call_stage("evaluate", cfg, run)
    assert sorted(j.language for j in seen) == GMMLU_LANGS and {j.benchmark for j in seen} == {"global_mmlu"}
    for path, mtime in before.items():
        assert (path.stat().st_mtime_ns == mtime) == (path.parent.name == "belebele"), path
    res = json.loads((run.eval / "global_mmlu" / "de.json").read_text())
    assert res["settings"]["versions"]["benchmark"] == BENCHMARKS["global_mmlu"].version

    # The scorer's version likewise: every result it produced is recomputed.
    from dataclasses import replace

    from xlt.scoring.scorers import GoldScorer

    seen.clear()
    monkeypatch.setattr(GoldScorer, "declaration", replace(GoldScorer.declaration, version=GoldScorer.declaration.version + 1))
    call_stage("evaluate", cfg, run)
    assert len(seen) == len(BELEBELE_LANGS) + len(GMMLU_LANGS)
