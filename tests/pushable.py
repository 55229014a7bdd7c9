"""A finished run that ``xlt push`` accepts, built without training or scoring: the results of
:mod:`tests.reporting.fake_runs`, a small model folder (config, safetensors weights, tokenizer files, the
train stage's card and provenance), the report (``write_report``), the Hub card (``write_hub_card``) and the
train / evaluate / report done-markers chained by their output ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save_file

from tests.reporting.fake_runs import MODELS, write_run
from xlt import config as xcfg
from xlt.reporting.model_card import write_hub_card
from xlt.reporting.run_report import card_model_name, card_summary
from xlt.reporting.tables import load_run_results
from xlt.run.files import atomic_write_json
from xlt.run.fingerprint import path_fingerprint
from xlt.run.layout import RunDir
from xlt.training.card import render_card

BELEBELE = {"eng_Latn": 80.0, "deu_Latn": 70.0, "arb_Arab": 55.0, "zho_Hans": 60.0, "arz_Arab": 40.0}
BELEBELE_TT = {"deu_Latn": 75.0, "arb_Arab": 65.0}
GMMLU = {"en": (60.0, 70.0), "de": (50.0, 55.0), "sw": (30.0, 35.0)}
MODEL_FILES = [
    "README.md",
    "config.json",
    "model.safetensors",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
]


def run_config(model: dict[str, Any] | None = None, data: dict[str, Any] | None = None) -> Any:
    """The validated config the fake run records (its benchmarks as :func:`write_run` writes them)."""
    benches = {
        "belebele": {
            "kind": "belebele",
            "hub_id": "facebook/belebele",
            "revision": "75b399394a9803252cfec289d103de462763db7c",
        },
        "belebele_tt": {"kind": "belebele", "hub_id": "facebook/belebele", "translate_test": True},
        "global_mmlu": {"kind": "global_mmlu", "hub_id": "CohereLabs/Global-MMLU"},
    }
    return xcfg.validate(
        {
            "recipe_name": "xlmr_zeroshot",
            "description": "XLM-R base, English only.",
            "model": model or MODELS["XLM-R"],
            "eval": {"benchmarks": benches},
            "data": data
            or {
                "sources": {
                    "race": {"hub_id": "ehovy/race", "license": "RACE terms"},
                    "sciq": {"hub_id": "allenai/sciq", "license": "CC BY-NC 3.0"},
                }
            },
        }
    )


def write_model(folder: Path, cfg: Any) -> None:
    """A small model folder as the train stage leaves it (weights of a few numbers; the card without results)."""
    folder.mkdir(parents=True, exist_ok=True)
    save_file(
        {"classifier.weight": np.arange(8, dtype=np.float32).reshape(2, 4)}, str(folder / "model.safetensors")
    )
    (folder / "config.json").write_text(json.dumps({"model_type": "xlm-roberta", "hidden_size": 4}))
    (folder / "tokenizer.json").write_text(
        json.dumps({"version": "1.0", "model": {"type": "Unigram", "vocab": [["<s>", 0.0]]}})
    )
    (folder / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "pad_token": "<pad>"}))
    (folder / "special_tokens_map.json").write_text(json.dumps({"bos_token": "<s>"}))
    summary = {
        "best_dev_accuracy": 0.61,
        "best_step": 100,
        "effective_batch_size": 32,
        "precision": "fp32",
        "dev_accuracy_history": [{"step": 100, "accuracy": 0.61}],
    }
    (folder / "README.md").write_text(
        render_card(
            cfg.model,
            cfg.training,
            cfg.data,
            cfg.eval,
            summary,
            {"train": 1000, "dev": 100},
            seed=cfg.seed,
            recipe_name=cfg.recipe_name,
            description=cfg.description,
            train_all=False,
        )
    )
    atomic_write_json(
        folder / "xlt_provenance.json",
        {"stage": "train", "inputs": "t", "fingerprint": path_fingerprint(folder)},
    )


def write_card(run: RunDir, cfg: Any) -> None:
    """``report.json`` (as :func:`xlt.reporting.run_report.write_report` writes it, without the other report files
    and plots: seconds) and the Hub card from the run's results, as the report stage writes them."""
    results = load_run_results(run.path)
    atomic_write_json(
        run.report(),
        {
            "recipe": cfg.recipe_name,
            "model": cfg.eval.model,
            "scorer": cfg.eval.scorer,
            "provenance": {"stage": "report", "inputs": "r1", "upstream": {"evaluate": "E1"}},
            "benchmarks": {
                name: {
                    "kind": r.kind,
                    "summary": r.summary,
                    "per_language": r.per_language.to_dict(orient="records"),
                }
                for name, r in results.items()
            },
        },
    )
    write_hub_card(
        run.model_card,
        run.report(),
        run.model_provenance,
        model=cfg.model,
        data=cfg.data,
        eval_cfg=cfg.eval,
        model_name=card_model_name(cfg.recipe_name, run),
        summary=card_summary(results),
    )


def pushable_run(
    path: Path, model: dict[str, Any] | None = None, data: dict[str, Any] | None = None
) -> RunDir:
    """A finished run at ``path`` (see the module docstring); returns it."""
    write_run(path, model or MODELS["XLM-R"], belebele=BELEBELE, belebele_tt=BELEBELE_TT, gmmlu=GMMLU, n=20)
    cfg = run_config(model, data)
    run = RunDir(path)
    write_model(run.model, cfg)
    run.mark_done("train", {"provenance": {"inputs": "t", "output_id": "T1"}})
    run.mark_done("evaluate", {"provenance": {"inputs": "e", "output_id": "E1", "upstream": {"train": "T1"}}})
    write_card(run, cfg)
    run.mark_done(
        "report", {"provenance": {"inputs": "r1", "output_id": "R1", "upstream": {"evaluate": "E1"}}}
    )
    return run
