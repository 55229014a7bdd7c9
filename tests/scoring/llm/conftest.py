"""Shared fixtures: upstream-schema benchmark files and one tiny offline causal LM per session."""

from __future__ import annotations

import pytest

from tests.fixtures.llm import build_tiny_lm, corpus, llm_root_config, write_belebele, write_global_mmlu


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
