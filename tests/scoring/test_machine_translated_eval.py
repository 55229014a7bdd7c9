"""A machine-translated version of a benchmark's languages that xlt makes itself (``machine_translate_from``):
the English items translated into each language by the ``translate`` group's model, scored beside the
human-translated entry, with their own provenance, so one command gives the HT vs MT finding both sides."""

from __future__ import annotations

import json

import numpy as np
import pytest
from omegaconf import OmegaConf

from tests.cli import xlt
from tests.fixtures.benchmarks import write_global_mmlu
from xlt import config as xcfg
from xlt.errors import ConfigError
from xlt.run.layout import RunDir
from xlt.scoring.jobs import plan_jobs, resolve
from xlt.stages import call_stage, context
from xlt.stages import evaluate as eval_stage

LANGS = ["en", "de", "sw"]


def _cfg(data, **mt):
    return xcfg.validate({
        "translate": {"kind": "echo"},
        "eval": {"scorer": "gold", "bootstrap_samples": 50, "benchmarks": {
            "gm": {"kind": "global_mmlu", "path": str(data)},
            "gm_mt": {"kind": "global_mmlu", "path": str(data), "machine_translate_from": "en", **mt},
        }},
    }, stages=["evaluate"])


@pytest.fixture
def data(tmp_path):
    return write_global_mmlu(tmp_path / "gmmlu", LANGS, n=8)


def test_the_english_items_are_translated_into_each_language_and_pair_with_the_human_ones(data, tmp_path):
    run = RunDir(tmp_path / "run")
    cfg = _cfg(data)
    # The source language is not one of the machine-translated entry's languages.
    assert [j.language for j in plan_jobs(cfg.eval) if j.benchmark == "gm_mt"] == ["de", "sw"]
    call_stage("evaluate", cfg, run)
    res = json.loads((run.eval / "gm_mt" / "de.json").read_text())
    assert res["machine_translated_from"] == "en" and res["translate_test"] is False and res["n"] == 8
    assert res["settings"]["machine_translate_from"] == "en"
    assert res["provenance"]["translator"] == {"kind": "echo"}  # what translated it, beside the job hash
    human = json.loads((run.eval / "gm" / "de.json").read_text())
    assert "machine_translated_from" not in human and "translator" not in human["provenance"]
    # Same question ids, so the findings pair the two versions question by question.
    ids = [json.loads(x)["id"] for x in (run.eval / "gm_mt" / "predictions" / "de.jsonl").read_text().splitlines()]
    assert ids == [json.loads(x)["id"] for x in (run.eval / "gm" / "predictions" / "de.jsonl").read_text().splitlines()]
    quality = json.loads((run.data / "machine_translated" / "gm_mt" / "de.json").read_text())
    assert quality["target"] == "deu_Latn" and quality["sources"] == ["en"] and quality["translator"] == "echo/v1"
    assert json.loads((run.data / "machine_translated" / "gm_mt" / "sw.json").read_text())["target"] == "swh_Latn"


def test_the_scorer_sees_the_translations_with_the_language_of_the_job(data, tmp_path, monkeypatch):
    seen: dict[tuple[str, str], list[str]] = {}

    class Recorder:
        def score(self, items, *, benchmark, language):
            seen[(benchmark, language)] = [*items["question"], *set(items["language"])]
            return np.eye(4)[np.asarray(items["label"])]

    monkeypatch.setattr(eval_stage, "build_scorer", lambda cfg, run: Recorder())
    call_stage("evaluate", _cfg(data), RunDir(tmp_path / "run"))
    assert seen[("gm_mt", "de")][0] == "[deu_Latn] [en] What is item 0?" and seen[("gm_mt", "de")][-1] == "de"
    assert seen[("gm_mt", "sw")][0] == "[swh_Latn] [en] What is item 0?"
    assert seen[("gm", "de")][0] == "[de] What is item 0?"


def test_an_edited_source_language_recomputes_the_translations_only(data, tmp_path):
    """The machine-translated results read the English files: editing them recomputes those results (and
    English's own), editing the German files recomputes only the human-translated German result."""
    run = RunDir(tmp_path / "run")
    cfg = _cfg(data)
    ctx = context(cfg, run, "evaluate")

    def hashes():
        return {(b, x): resolve(cfg.eval, b, x).provenance(ctx)["job"]
                for b, langs in (("gm", LANGS), ("gm_mt", ["de", "sw"])) for x in langs}

    before = hashes()
    write_global_mmlu(data, ["en"], n=7)
    after_en = hashes()
    assert {k for k in before if before[k] != after_en[k]} == {("gm", "en"), ("gm_mt", "de"), ("gm_mt", "sw")}
    write_global_mmlu(data, ["de"], n=7)
    after_de = hashes()
    assert {k for k in after_en if after_en[k] != after_de[k]} == {("gm", "de")}


def test_a_translator_setting_enters_the_machine_translated_results_only(data, tmp_path):
    run = RunDir(tmp_path / "run")
    cfg = _cfg(data)
    ctx = context(cfg, run, "evaluate")
    before = {j: j.provenance(ctx)["job"] for j in plan_jobs(cfg.eval)}
    OmegaConf.update(cfg, "translate.max_new_tokens_ratio", 3.0)
    ctx = context(cfg, run, "evaluate")
    after = {j: j.provenance(ctx)["job"] for j in plan_jobs(cfg.eval)}
    assert {j.benchmark for j in before if before[j] != after[j]} == {"gm_mt"}


@pytest.mark.parametrize(("mt", "message"), [
    ({"machine_translate_from": "xx"}, "machine_translate_from"),
    ({"languages": ["en"]}, "no language to machine-translate en into"),
])
def test_a_bad_source_or_selection_is_named(data, mt, message):
    with pytest.raises(ConfigError, match=message):
        plan_jobs(_cfg(data, **mt).eval)


def test_translate_test_and_machine_translate_from_exclude_each_other(data):
    with pytest.raises(ConfigError, match="exclude each other"):
        _cfg(data, translate_test=True)


def test_llm_few_shot_is_refused_for_a_machine_translated_entry(data):
    cfg = OmegaConf.to_container(_cfg(data), resolve=False)
    cfg["eval"].update(scorer="llm", llm={"model": "/m", "num_fewshot": 5})
    with pytest.raises(ConfigError, match="num_fewshot=0"):
        xcfg.validate(cfg, stages=["evaluate"])
    cfg["eval"]["llm"]["num_fewshot"] = 0
    xcfg.validate(cfg, stages=["evaluate"])


@pytest.mark.slow  # over 15 s (several full runs, a wheel, a sweep): the slow tier, docs/testing.md
def test_one_command_gives_both_sides_of_the_human_vs_machine_translated_finding(data, tmp_path):
    """The eval preset as a user runs it (HT and an MT version xlt makes), then report --compare: the HT vs MT
    finding is tested on the same languages, per tier, instead of "cannot be tested"."""
    root = tmp_path / "runs"
    common = ["+recipe=demo_tiny", "eval=global_mmlu_ht_mt", "translate=echo", "eval.scorer=gold",
              f"eval.benchmarks.global_mmlu.path={data}", f"eval.benchmarks.global_mmlu_mt.path={data}",
              "eval.benchmarks.global_mmlu_mt.languages=[deu_Latn,swh_Latn]", "eval.bootstrap_samples=50",
              f"run_root={root}"]
    for seed in (1, 2):  # two seeds: one system (--compare takes two or more runs)
        proc = xlt("xlt.evaluate", *common, f"seed={seed}")
        assert proc.returncode == 0, proc.stderr[-3000:]
    runs = sorted(p.parent for p in root.rglob("config.yaml"))
    mt = json.loads((runs[0] / "eval" / "global_mmlu_mt" / "de.json").read_text())
    assert mt["machine_translated_from"] == "en" and mt["provenance"]["translator"] == {"kind": "echo"}
    out = tmp_path / "cmp"
    proc = xlt("xlt.report", "--compare", *map(str, runs), "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = {f["id"]: f for f in json.loads((out / "compare.json").read_text())["findings"]}
    f = found["gmmlu_human_translated_above_machine_translated"]
    # The gold scorer answers both versions right: HT - MT = 0 on the high tier, which is not "HT higher".
    assert f["verdict"] == "does not hold", f["why"]
    assert {(r["tier"], r["HT"], r["MT"], r["languages"]) for r in f["numbers"]} == {
        ("high", "global_mmlu", "global_mmlu_mt", 1), ("low", "global_mmlu", "global_mmlu_mt", 1)}
    assert "models generally perform better on human-translated data for high-resource languages" in f["paper_says"]
    # The run's report says how each version was made (the language table says "human" for de and sw).
    from xlt.reporting.tables import load_run_results

    frames = load_run_results(runs[0])
    assert set(frames["global_mmlu_mt"].per_language["translation"]) == {"machine (xlt, from en)"}
    assert set(frames["global_mmlu"].per_language.set_index("language").loc[["de", "sw"], "translation"]) == {"human"}
