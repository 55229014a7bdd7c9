"""Checkpoints load as they are published: safetensors, ``pytorch_model.bin`` only, or sharded ``.bin`` with an
index, for the encoder, the translator (hf and ctranslate2 engines) and the LLM loader, from a local folder in
the Hub's layout and, offline, from a Hugging Face cache filled the way ``snapshot_download`` fills it."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

LAYOUTS = ("safetensors", "bin", "sharded-bin")


def relayout(src: Path, dst: Path, layout: str) -> Path:
    """A copy of the model folder ``src`` (saved with ``model.safetensors``) whose weights are in ``layout``."""
    from safetensors.torch import load_file

    shutil.copytree(src, dst)
    if layout == "safetensors":
        return dst
    state = load_file(str(dst / "model.safetensors"))
    (dst / "model.safetensors").unlink()
    if layout == "bin":
        torch.save(state, dst / "pytorch_model.bin")
        return dst
    keys = sorted(state)
    shards = {f"pytorch_model-0000{i + 1}-of-00002.bin": keys[i::2] for i in range(2)}
    for name, part in shards.items():
        torch.save({k: state[k] for k in part}, dst / name)
    index = {"metadata": {"total_size": sum(t.numel() * t.element_size() for t in state.values())},
             "weight_map": {k: name for name, part in shards.items() for k in part}}
    (dst / "pytorch_model.bin.index.json").write_text(json.dumps(index))
    return dst


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


EXPECTED_FILE = {"safetensors": "model.safetensors", "bin": "pytorch_model.bin",
                 "sharded-bin": "pytorch_model.bin.index.json"}


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    from xlt.config.model import ModelConfig
    from xlt.modeling.load import load_model, load_tokenizer

    tok = load_tokenizer(ModelConfig())
    model = load_model(ModelConfig(), tok, seed=0).eval()
    path = tmp_path_factory.mktemp("enc") / "safe"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path, model, tok


@pytest.fixture(scope="module")
def tiny_mt(tmp_path_factory):
    from xlt.translation.tiny import build_tiny_nllb

    path = tmp_path_factory.mktemp("mt") / "safe"
    build_tiny_nllb(path, ["hello world", "the cat sat on the mat", "bonjour le monde"])
    return path


@pytest.mark.parametrize("layout", LAYOUTS)
def test_encoder_loads_every_published_layout(tmp_path, tiny_encoder, layout, caplog):
    from xlt.config.model import ModelConfig
    from xlt.modeling.load import load_model, load_trained

    src, ref, tok = tiny_encoder
    folder = relayout(src, tmp_path / layout, layout)
    with caplog.at_level(logging.INFO, logger="xlt"):
        net = load_model(ModelConfig(name_or_path=str(folder)), tok, seed=0)  # model=own training
        trained, _ = load_trained(folder)  # eval.model=<folder>
    assert same_weights(net, ref) and same_weights(trained, ref)
    assert f"weights from {EXPECTED_FILE[layout]}" in caplog.text
    if layout != "safetensors":
        assert "weights_only=True" in caplog.text


@pytest.mark.parametrize("layout", LAYOUTS)
def test_translator_loads_every_published_layout(tmp_path, tiny_mt, layout, caplog, monkeypatch):
    from xlt.translation.engines.base import EngineSettings
    from xlt.translation.engines.ct2 import CT2Translator
    from xlt.translation.engines.hf import HFSeq2SeqTranslator

    monkeypatch.setenv("XLT_CACHE", str(tmp_path / "xlt-cache"))  # the CTranslate2 conversions
    folder = relayout(tiny_mt, tmp_path / layout, layout)
    texts = ["hello world", "the cat"]
    ref = HFSeq2SeqTranslator(str(tiny_mt), EngineSettings(device="cpu", precision="fp32", max_new_tokens=8))
    want = ref.translate(texts, "eng_Latn", "fra_Latn")
    with caplog.at_level(logging.INFO, logger="xlt"):
        hf = HFSeq2SeqTranslator(str(folder), EngineSettings(device="cpu", precision="fp32", max_new_tokens=8))
        assert hf.translate(texts, "eng_Latn", "fra_Latn") == want
        ct = CT2Translator(str(folder), EngineSettings(device="cpu", max_new_tokens=8), compute_type="float32")
        assert len(ct.translate(texts, "eng_Latn", "fra_Latn")) == 2
    assert f"weights from {EXPECTED_FILE[layout]}" in caplog.text


def test_llm_loader_reads_a_bin_only_checkpoint(tmp_path, caplog):
    from omegaconf import OmegaConf

    from tests.fixtures.llm import build_tiny_lm
    from xlt.config.llm import LLMConfig
    from xlt.scoring.llm.load import load_causal_lm

    src = build_tiny_lm(tmp_path / "lm", ["a b c d", "the answer is A"], vocab_size=300, hidden=16, layers=1)
    outs = {}
    for layout in ("safetensors", "bin"):
        folder = relayout(src, tmp_path / layout, layout)
        llm = OmegaConf.merge(OmegaConf.structured(LLMConfig), {"model": str(folder), "device": "cpu", "dtype": "float32"})
        with caplog.at_level(logging.INFO, logger="xlt"):
            model, _, _ = load_causal_lm(llm)
        outs[layout] = model
        assert f"weights from {EXPECTED_FILE[layout]}" in caplog.text
    assert same_weights(outs["safetensors"], outs["bin"])


OFFLINE_SCRIPT = r"""
import json, logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stdout)
from xlt.run.fingerprint import resource_fingerprint
from xlt.prefetch import Planned, fetch_all, fetch_model
from xlt.resources import Resource
from xlt.translation.engines.base import EngineSettings
from xlt.translation.engines.ct2 import CT2Translator
from xlt.translation.engines.hf import HFSeq2SeqTranslator
fetch_all([Planned(["+recipe=x"], None, [Resource("model", "org/tiny-nllb")])], report=print)
folder = fetch_model(Resource("model", "org/tiny-nllb"), local_only=True)
print("FETCHED", folder)
print("FINGERPRINT", resource_fingerprint("org/tiny-nllb"))
hf = HFSeq2SeqTranslator("org/tiny-nllb", EngineSettings(device="cpu", precision="fp32", max_new_tokens=8))
ct = CT2Translator("org/tiny-nllb", EngineSettings(device="cpu", max_new_tokens=8), compute_type="float32")
print("HF", json.dumps(hf.translate(["hello world"], "eng_Latn", "fra_Latn")))
print("CT2", json.dumps(ct.translate(["hello world"], "eng_Latn", "fra_Latn")))
"""


@pytest.mark.slow  # over 10 s of full runs through the CLI: the slow tier, docs/testing.md
def test_bin_only_checkpoint_translates_offline_from_the_hub_cache(tmp_path, tiny_mt):
    """The cache as ``snapshot_download`` leaves it (blobs linked from snapshots/<sha>/, refs/main holding the
    sha), holding what ``prefetch`` fetches for a .bin-only repository: both engines translate with
    HF_HUB_OFFLINE=1, the log names the file, and the fingerprint is the commit the cache resolves main to."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--org--tiny-nllb"
    snap = repo / "snapshots" / sha
    relayout(tiny_mt, tmp_path / "bin", "bin")
    (repo / "blobs").mkdir(parents=True)
    snap.mkdir(parents=True)
    for f in sorted((tmp_path / "bin").iterdir()):
        blob = repo / "blobs" / f"blob-{f.name}"
        shutil.copy(f, blob)
        os.symlink(os.path.relpath(blob, snap), snap / f.name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(sha)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub"),
           "XLT_CACHE": str(tmp_path / "xlt-cache"), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.run([sys.executable, "-c", OFFLINE_SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert f"FETCHED {snap}" in out and f"FINGERPRINT hub:org/tiny-nllb@{sha}" in out
    assert "weights from pytorch_model.bin (no safetensors published" in out
    assert "offline runs load pytorch_model.bin (no safetensors published" in out  # prefetch says what it fetched
    hf = json.loads(out.split("HF ", 1)[1].splitlines()[0])
    ct = json.loads(out.split("CT2 ", 1)[1].splitlines()[0])
    assert len(hf) == len(ct) == 1


def test_a_bin_only_encoder_trains_and_its_model_evaluates(tmp_path, tiny_encoder, caplog):
    """``model=own`` with a checkpoint published as ``pytorch_model.bin`` only: the train stage fine-tunes it
    (the log names the file and the loader), saves safetensors, and the evaluate stage scores the result."""
    from tests.fixtures.benchmarks import write_global_mmlu
    from tests.training.conftest import make_cfg, write_train_set
    from xlt.run.layout import RunDir
    from xlt.stages import call_stage

    src, _, _ = tiny_encoder
    folder = relayout(src, tmp_path / "bin-only", "bin")
    run = RunDir(tmp_path / "run")
    write_train_set(run, 48, 16)
    write_global_mmlu(tmp_path / "g", ["ru"], n=6)
    cfg = make_cfg(**{"model.name_or_path": str(folder), "model.name": "own", "training.max_steps": 3,
                      "training.eval_steps": 3, "eval.batch_size": 4, "eval.bootstrap_samples": 20,
                      "eval.benchmarks": {"global_mmlu": {"kind": "global_mmlu", "path": str(tmp_path / "g")}}})
    with caplog.at_level(logging.INFO, logger="xlt"):
        call_stage("train", cfg, run)
    assert "weights from pytorch_model.bin" in caplog.text and "weights_only=True" in caplog.text
    assert (run.model / "model.safetensors").is_file() and not (run.model / "pytorch_model.bin").exists()
    summary = call_stage("evaluate", cfg, run)
    assert summary["global_mmlu"]["n_questions"] == 6
