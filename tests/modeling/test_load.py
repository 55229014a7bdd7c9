"""Loading: the offline tiny model and tokenizer, Hub tokenizers cached once, clear offline errors."""

from __future__ import annotations

import pytest
import torch

from xlt.config.model import ModelConfig
from xlt.errors import HubUnavailableError
from xlt.modeling import load as load_mod
from xlt.modeling.load import load_model, load_tokenizer, load_trained


def test_tiny_model_is_seeded_and_matches_its_tokenizer():
    cfg = ModelConfig()
    tok = load_tokenizer(cfg)
    a, b = load_model(cfg, tok, seed=3), load_model(cfg, tok, seed=3)
    assert a.config.vocab_size == len(tok) and a.config.max_position_embeddings == cfg.max_length + 2
    for (name, pa), (_, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(pa, pb), name
    c = load_model(cfg, tok, seed=4)
    assert not torch.equal(a.classifier.weight, c.classifier.weight)


def test_hub_tokenizer_is_converted_once_then_read_from_the_cache(tmp_path, monkeypatch):
    """XLM-V's slow tokenizer takes minutes to convert: the converted one is cached and reused."""
    monkeypatch.setenv("XLT_CACHE", str(tmp_path))
    tiny = load_tokenizer(ModelConfig())
    calls = []

    from transformers import AutoTokenizer

    real = AutoTokenizer.from_pretrained

    def fake(name, *args, **kwargs):
        calls.append(str(name))
        if str(name) == "facebook/xlm-v-base":
            return tiny  # stands in for the Hub download + conversion
        return real(name, *args, **kwargs)

    monkeypatch.setattr(AutoTokenizer, "from_pretrained", fake)
    cfg = ModelConfig(name_or_path="facebook/xlm-v-base", revision="abc123")
    first = load_tokenizer(cfg)
    second = load_tokenizer(cfg)
    assert calls[0] == "facebook/xlm-v-base"
    assert calls[1] == str(load_mod._cached_tokenizer_dir("facebook/xlm-v-base", "abc123"))
    assert first("a b")["input_ids"] == second("a b")["input_ids"]


def test_missing_hub_model_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubUnavailableError, match="model.name_or_path"):
        load_model(ModelConfig(name_or_path="FacebookAI/xlm-roberta-base", tokenizer=None), tokenizer=object())


def test_trained_model_reloads_with_its_tokenizer(tmp_path):
    cfg = ModelConfig()
    tok = load_tokenizer(cfg)
    model = load_model(cfg, tok, seed=0)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").is_file()
    again, tok2 = load_trained(tmp_path)
    enc = tok2(["x"] * 4, ["a", "b", "c", "d"], return_tensors="pt", padding=True)
    batch = {k: v.unsqueeze(0) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
    model.eval()
    again.eval()
    assert torch.allclose(model(**batch).logits, again(**batch).logits)


def test_pretrained_head_is_seeded_and_reported():
    """The new MC head of a pretrained checkpoint is drawn after set_seed(seed): same seed, same head."""
    import torch

    from tests.pretrained import minilm_dir
    from xlt.config.model import ModelConfig
    from xlt.modeling.load import load_model

    cfg = ModelConfig(name="minilm", name_or_path=str(minilm_dir()), max_length=64)
    torch.manual_seed(123)  # whatever ran before must not matter
    a = load_model(cfg, seed=1)
    torch.rand(10)
    b = load_model(cfg, seed=1)
    c = load_model(cfg, seed=2)
    assert a.xlt_new_weights == ["classifier.bias", "classifier.weight"]
    assert torch.equal(a.classifier.weight, b.classifier.weight) and torch.equal(a.classifier.bias, b.classifier.bias)
    assert not torch.equal(a.classifier.weight, c.classifier.weight)
    # The pretrained body is loaded, not drawn: the same whatever the seed.
    assert torch.equal(a.bert.encoder.layer[0].attention.self.query.weight, c.bert.encoder.layer[0].attention.self.query.weight)
