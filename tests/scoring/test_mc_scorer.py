"""The encoder MC scorer: length-sorted dynamic batches give the same scores as one item at a time."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.fixtures.benchmarks import write_belebele, write_global_mmlu
from xlt import config as xcfg
from xlt.config.model import ModelConfig
from xlt.contract import call_stage
from xlt.data.benchmarks import BENCHMARKS
from xlt.run import RunDir


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from xlt.modeling.load import load_model, load_tokenizer

    mcfg = ModelConfig()
    tok = load_tokenizer(mcfg)
    model = load_model(mcfg, tok, seed=0).eval()
    path = tmp_path_factory.mktemp("model")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path, model, tok


def test_mc_scores_match_item_by_item(tmp_path, tiny):
    from xlt.scoring.mc import MCScorer

    path, model, tok = tiny
    write_belebele(tmp_path, ["rus_Cyrl"], n=10)
    cfg = xcfg.validate({"eval": {"benchmarks": {"belebele": {"kind": "belebele", "path": str(tmp_path)}}}})
    items = BENCHMARKS["belebele"].load(cfg.eval.benchmarks.belebele, "rus_Cyrl")
    scorer = MCScorer(model, tok, max_length=64, batch_size=3, device="cpu", progress=False)
    scores = scorer.score(items, benchmark="belebele", language="rus_Cyrl")
    assert scores.shape == (10, 4)
    for i in (0, 4, 9):
        row = items[i]
        enc = tok([row["passage"]] * 4, [f"{row['question']} {o}" for o in row["options"]],
                  truncation="only_first", max_length=64, padding=True, return_tensors="pt")
        with torch.no_grad():
            ref = model(input_ids=enc["input_ids"][None], attention_mask=enc["attention_mask"][None]).logits[0]
        np.testing.assert_allclose(scores[i], ref.numpy(), rtol=1e-4, atol=1e-5)


def test_mc_scorer_through_stage_from_path(tmp_path, tiny):
    path = tiny[0]
    write_global_mmlu(tmp_path / "g", ["ru"], n=6)
    cfg = xcfg.validate({"model": {"max_length": 64}, "eval": {
        "model": str(path), "scorer": "mc", "batch_size": 4, "bootstrap_samples": 50,
        "benchmarks": {"global_mmlu": {"kind": "global_mmlu", "path": str(tmp_path / "g")}}}})
    run = RunDir(tmp_path / "run")
    summary = call_stage("evaluate", cfg, run)
    assert summary["global_mmlu"]["n_questions"] == 6
    preds = [json.loads(x) for x in (run.eval / "global_mmlu" / "predictions" / "ru.jsonl").read_text().splitlines()]
    assert all(p["prediction"] == int(np.argmax(p["scores"])) for p in preds)


def test_run_model_missing_is_clear(tmp_path):
    from xlt.errors import ConfigError
    from xlt.scoring.mc import MCScorer

    cfg = xcfg.validate({})
    with pytest.raises(ConfigError, match="no trained model"):
        MCScorer.from_config(cfg, RunDir(tmp_path))
