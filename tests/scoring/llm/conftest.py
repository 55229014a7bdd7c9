"""Shared fixtures: upstream-schema benchmark files and one tiny offline causal LM per session; the harness
parity set (the tiny Llama on Belebele, Global-MMLU Full and Lite and XCOPA) with lm-evaluation-harness's own
float32 run of it and its output folder, shared by the parity tests and the tests of the harness's files."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.fixtures.llm import (
    build_tiny_lm,
    corpus,
    llm_root_config,
    write_belebele,
    write_global_mmlu,
    write_harness_tasks,
)
from tests.fixtures.llm.harness_folders import CHAT, XCOPA, run_harness


@pytest.fixture(scope="session")
def llm_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("llm_data")
    return {"belebele": write_belebele(root / "belebele"), "gmmlu": write_global_mmlu(root / "gmmlu")}


@pytest.fixture(scope="session")
def llm_files(llm_data, tmp_path_factory):
    model_dir = build_tiny_lm(tmp_path_factory.mktemp("llm_model"), corpus([llm_data["belebele"], llm_data["gmmlu"]]))
    return {**llm_data, "model": model_dir}


@pytest.fixture(scope="session")
def loaded_lm(llm_files):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(llm_files["model"])
    model = AutoModelForCausalLM.from_pretrained(llm_files["model"]).eval()
    return model, tok


@pytest.fixture
def make_cfg(llm_files):
    def make(**llm):
        benchmarks = {
            "belebele": {"kind": "belebele", "path": str(llm_files["belebele"])},
            "global_mmlu": {"kind": "global_mmlu", "path": str(llm_files["gmmlu"])},
            "global_mmlu_lite": {"kind": "global_mmlu_lite", "path": str(llm_files["gmmlu"])},
        }
        return llm_root_config(benchmarks, {"model": str(llm_files["model"]), "batch_size": 4, **llm})

    return make


@pytest.fixture
def load_items(llm_data):
    from omegaconf import OmegaConf

    from xlt.config.eval import BenchmarkConfig
    from xlt.data.benchmarks import get_benchmark

    def load(kind: str, lang: str, split: str = "test"):
        path = llm_data["belebele"] if kind == "belebele" else llm_data["gmmlu"]
        bcfg = OmegaConf.merge(OmegaConf.structured(BenchmarkConfig), {"kind": kind, "path": str(path)})
        return get_benchmark(kind).load(bcfg, lang, split=split)

    return load


@pytest.fixture(scope="session")
def parity_setup(tmp_path_factory):
    """The parity set: fixture files, the tiny Llama (and a copy with a chat template), the harness's built-in
    tasks under their own names reading those files."""
    root = tmp_path_factory.mktemp("llm_parity")
    bele = write_belebele(root / "belebele")
    gmmlu = write_global_mmlu(root / "gmmlu")
    model_dir = build_tiny_lm(root / "model", corpus([bele, gmmlu]))
    chat_dir = root / "chat_model"
    shutil.copytree(model_dir, chat_dir)
    tok_cfg = json.loads((chat_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    (chat_dir / "tokenizer_config.json").write_text(json.dumps({**tok_cfg, "chat_template": CHAT}), encoding="utf-8")
    tasks = write_harness_tasks(root / "tasks", bele, gmmlu, xcopa_root=XCOPA, builtin_names=True)
    return {"root": root, "bele": bele, "gmmlu": gmmlu, "model": model_dir, "chat_model": chat_dir, "tasks": tasks}


@pytest.fixture(scope="session")
def harness_f32_run(parity_setup):
    """The harness's float32 run of the parity set: its predictions and its output folder (``folder``: the model's
    folder in it)."""
    pytest.importorskip("lm_eval")
    out = parity_setup["root"] / "harness_out"
    predictions = run_harness(parity_setup, dtype="float32", output=out)
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return {"predictions": predictions, "folder": folder, "output": out}
