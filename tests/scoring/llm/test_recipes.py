"""The LLM recipes compose, validate and run end to end (evaluate + report) through the scorer registry."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir

from xlt import cli
from xlt import config as xcfg
from xlt.run.layout import RunDir


def compose_recipe(name: str, *overrides: str):
    with initialize_config_dir(config_dir=cli.CONF_DIR, version_base="1.3"):
        return xcfg.validate(compose("config", overrides=[f"+recipe={name}", *overrides]))


@pytest.mark.parametrize("name,mode,shots", [("llm_5shot", "loglikelihood", 5), ("llm_0shot", "generate", 0)])
def test_recipes_compose(name, mode, shots):
    cfg = compose_recipe(name, "eval.llm.model=org/some-llm")
    assert list(cfg.stages) == ["evaluate", "report"]
    assert cfg.eval.scorer == "llm" and cfg.eval.llm.mode == mode and cfg.eval.llm.num_fewshot == shots
    assert cfg.eval.model == "org/some-llm"
    assert set(cfg.eval.benchmarks) == {"belebele", "global_mmlu"}


def test_llm_5shot_recipe_runs_evaluate_and_report(llm_files, tmp_path):
    cfg = compose_recipe(
        "llm_5shot",
        f"eval.llm.model={llm_files['model']}",
        "eval.llm.batch_size=4",
        f"eval.benchmarks.belebele.path={llm_files['belebele']}",
        "eval.benchmarks.belebele.languages=[eng_Latn]",
        f"eval.benchmarks.global_mmlu.path={llm_files['gmmlu']}",
        "eval.bootstrap_samples=50",
    )
    run = RunDir(tmp_path / "run")
    cli.run_stages(cfg, run, ["evaluate"])
    assert run.is_done("evaluate")
    res = json.loads((tmp_path / "run" / "eval" / "belebele" / "eng_Latn.json").read_text())
    assert res["scorer"] == "llm" and res["n"] == 9
    meta = res["scorer_meta"]
    assert meta["mode"] == "loglikelihood" and meta["fewshot"]["k"] == 5 and meta["single_pass_questions"] == 9
    # eval.llm.dtype=auto is recorded as what it resolved to (float32 on a CPU, bfloat16 on a GPU)
    assert cfg.eval.llm.dtype == "auto" and meta["dtype"] == ("bfloat16" if torch.cuda.is_available() else "float32")
    side = json.loads((tmp_path / "run" / "eval" / "belebele" / "llm_meta" / "eng_Latn.json").read_text())
    assert side["forward"] == meta["forward"]
    gm = json.loads((tmp_path / "run" / "eval" / "global_mmlu" / "en.json").read_text())
    assert gm["n"] == 12 and gm["scorer_meta"]["fewshot"]["split"] == "dev"
    # A rerun skips finished languages: nothing is scored twice.
    before = (tmp_path / "run" / "eval" / "belebele" / "eng_Latn.json").stat().st_mtime_ns
    cli.run_stages(cfg, run, ["evaluate"])
    assert (tmp_path / "run" / "eval" / "belebele" / "eng_Latn.json").stat().st_mtime_ns == before
    preds = tmp_path / "run" / "eval" / "belebele" / "predictions" / "eng_Latn.jsonl"
    rows = [json.loads(line) for line in preds.read_text().splitlines()]
    assert len(rows) == 9 and [r["prediction"] for r in rows] == [int(np.argmax(r["scores"])) for r in rows]
    cli.run_stages(cfg, run, ["report"])
    assert run.is_done("report")
    report = (tmp_path / "run" / "report.md").read_text()
    assert "eng_Latn" in report


@pytest.mark.parametrize("name", ["llm_5shot", "llm_0shot"])
def test_a_two_option_benchmark_runs_through_the_llm_recipes(llm_files, tmp_path, name):
    """XCOPA (bundled sample, two options, no passage) through the LLM recipes: k-shot log-likelihood
    with option-text continuations and validation few-shot draws, and zero-shot generation."""
    from pathlib import Path

    from omegaconf import OmegaConf

    xcopa = Path(__file__).resolve().parents[3] / "xlt" / "assets" / "demo" / "xcopa"
    cfg = compose_recipe(name, f"eval.llm.model={llm_files['model']}", "eval.llm.batch_size=4",
                         "eval.benchmarks.belebele.enabled=false", "eval.benchmarks.global_mmlu.enabled=false",
                         "eval.bootstrap_samples=50", "eval.llm.chat_template=false")  # the tiny LM has no template
    raw = OmegaConf.to_container(cfg, resolve=False)
    raw["eval"]["benchmarks"]["xcopa"] = {"kind": "xcopa", "path": str(xcopa), "languages": ["it", "zh"]}
    cfg = xcfg.validate(raw)
    run = RunDir(tmp_path / "run")
    cli.run_stages(cfg, run, ["evaluate", "report"])
    res = json.loads((tmp_path / "run" / "eval" / "xcopa" / "zh.json").read_text())
    assert res["n"] == 8 and res["code"] == "zho_Hans"
    assert res["subsets"]["cause"]["n"] + res["subsets"]["effect"]["n"] == 8
    rows = [json.loads(x) for x in (tmp_path / "run" / "eval" / "xcopa" / "predictions" / "zh.jsonl").read_text().splitlines()]
    assert all(len(r["scores"]) == 2 for r in rows)
    meta = res["scorer_meta"]
    if name == "llm_5shot":
        assert meta["fewshot"] == {"k": 5, "split": "validation", "sampler": "random", "seed": 1234}
        assert all(r["prediction"] in (0, 1) for r in rows)
    else:
        assert meta["mode"] == "generate" and 0 <= meta["unparseable"] <= 8
    assert "\n## XCOPA\n" in (tmp_path / "run" / "report.md").read_text()  # the definition's title
