"""benchmarks/gpu_bench.py runs every architecture with tiny shapes on any machine and reports sane numbers."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_bench.py"


@pytest.fixture(scope="module")
def gpu_bench():
    spec = importlib.util.spec_from_file_location("gpu_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_bench"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_tiny_run_reports_every_model_and_phase(gpu_bench, tmp_path):
    rows = gpu_bench.main(["--tiny", "--json", str(tmp_path / "out.json")])
    assert {(r["model"], r["phase"]) for r in rows} == {(m, p) for m in gpu_bench.ARCHS for p in ("train", "eval")}
    for r in rows:
        assert r["real_tokens_per_s"] > 0 and r["processed_tokens_per_s"] >= r["real_tokens_per_s"]
        assert 0 <= r["padding_share"] < 1 and r["tflops"] > 0
    # XLM-V's vocabulary is ~3.6x XLM-R's: more parameters, same non-embedding part.
    by = {r["model"]: r for r in rows if r["phase"] == "train"}
    assert by["xlmv_base"]["params_m"] > by["xlmr_base"]["params_m"]
    assert by["xlmv_base"]["non_embedding_params_m"] == pytest.approx(by["xlmr_base"]["non_embedding_params_m"])
    assert json.loads((tmp_path / "out.json").read_text())["results"] == rows


def test_real_shapes_and_flops(gpu_bench):
    from transformers import XLMRobertaConfig

    assert gpu_bench.ARCHS["xlmv_base"]["vocab_size"] == 901629
    cfg = XLMRobertaConfig(**gpu_bench.ARCHS["xlmr_base"])
    # Training is 3x the forward FLOPs of the dense part (forward + 2x backward).
    assert gpu_bench.flops_per_token(cfg, 85_000_000, 512, True) == 3 * gpu_bench.flops_per_token(cfg, 85_000_000, 512, False)
    lengths = gpu_bench.question_lengths(1000, 512, __import__("torch").Generator().manual_seed(0))
    assert 0.4 < float((lengths == 512).float().mean()) < 0.6 and int(lengths.min()) >= 204


def test_peak_lookup(gpu_bench):
    import torch

    assert gpu_bench.peak_tflops(torch.device("cpu"), None) is None
    assert gpu_bench.peak_tflops(torch.device("cpu"), 100.0) == 100.0
    assert next(p for k, p in gpu_bench.PEAK_BF16_TFLOPS if k in "NVIDIA H100 PCIe") == 756.0
