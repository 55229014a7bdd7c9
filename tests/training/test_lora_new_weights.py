"""LoRA evaluates the model it trained, whatever the checkpoint lacks: every newly initialised weight (the
load report's missing keys) is trained and saved, or the run refuses, saying why.

multilingual-e5 (model=me5_small) has no pooler: before, LoRA kept only the classifier in modules_to_save,
so the pooler stayed frozen at its random start, was not saved, and was initialised again, differently, when
the evaluate stage reloaded the model (issue 33: Belebele 5% in English after training).
"""

from __future__ import annotations

import pytest
import torch

from tests.me5 import me5_dir
from xlt.config.model import PACKAGED_MODEL_IDS, LoraConfig, ModelConfig
from xlt.errors import ConfigError
from xlt.modeling.load import load_model, load_tokenizer, load_trained
from xlt.training.lora import point_adapter_at_base, trained_new_modules, wrap_lora


def _batch(tok):
    passages = ["Paris est la capitale de la France.", "Der Hund schläft im Garten."]
    opts = [["Paris", "Rome", "Berlin", "Madrid"], ["im Haus", "im Garten", "im Auto", "im Park"]]
    enc = tok([p for p, o in zip(passages, opts, strict=True) for _ in o], [x for o in opts for x in o],
              padding=True, return_tensors="pt")
    return {k: v.view(2, 4, -1) for k, v in enc.items()}, torch.tensor([0, 1])


@pytest.mark.slow  # ~30 s: the 470 MB checkpoint is loaded twice
def test_lora_trains_and_saves_the_missing_pooler_of_a_real_checkpoint(tmp_path):
    me5_dir()
    cfg = ModelConfig(name="me5_small_q4", name_or_path=PACKAGED_MODEL_IDS[0], max_length=64)
    tok = load_tokenizer(cfg)
    model = load_model(cfg, tok, seed=1)
    assert {"bert.pooler.dense.weight", "bert.pooler.dense.bias", "classifier.weight"} <= set(model.xlt_new_weights)
    initial_pooler = model.bert.pooler.dense.weight.detach().clone()
    peft = wrap_lora(model, LoraConfig(r=4, alpha=8, dropout=0.0))
    trainable = {n for n, p in peft.named_parameters() if p.requires_grad}
    assert any("pooler.dense.modules_to_save" in n for n in trainable), sorted(trainable)[:8]
    batch, labels = _batch(tok)
    opt = torch.optim.SGD([p for p in peft.parameters() if p.requires_grad], lr=0.5)
    peft.train()
    peft(**batch, labels=labels).loss.backward()
    opt.step()
    peft.eval()
    with torch.inference_mode():
        trained = peft(**batch).logits
    pooler = peft.get_base_model().bert.pooler.dense.modules_to_save["default"].weight
    assert not torch.allclose(pooler, initial_pooler)  # trained, not frozen at its random start

    peft.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    point_adapter_at_base(tmp_path, PACKAGED_MODEL_IDS[0])  # as the train stage saves it
    torch.manual_seed(5)  # the base's new pooler is drawn anew at the load: the saved one must replace it
    again, _ = load_trained(tmp_path)
    with torch.inference_mode():
        assert torch.allclose(again.eval()(**batch).logits, trained, atol=1e-5)


def test_full_fine_tuning_saves_the_new_pooler_too(tmp_path):
    """A full fine-tune saves the whole model: the reload misses nothing and gives the same logits."""
    from transformers import AutoModelForMultipleChoice

    me5_dir()
    cfg = ModelConfig(name="me5_small_q4", name_or_path=PACKAGED_MODEL_IDS[0], max_length=64)
    tok = load_tokenizer(cfg)
    model = load_model(cfg, tok, seed=1).eval()
    model.save_pretrained(tmp_path)
    again, info = AutoModelForMultipleChoice.from_pretrained(tmp_path, output_loading_info=True)
    assert not info["missing_keys"]
    batch, _ = _batch(tok)
    with torch.inference_mode():
        assert torch.allclose(again.eval()(**batch).logits, model(**batch).logits, atol=1e-6)


def test_a_new_weight_lora_would_adapt_or_cannot_save_is_refused():
    model = load_model(ModelConfig(), seed=0)  # the tiny model: module names of an XLM-R MC model
    query = "roberta.encoder.layer.0.attention.self.query.weight"
    assert trained_new_modules(model, ["roberta.pooler.dense.bias"], ["query", "value"]) == ["classifier", "roberta.pooler.dense"]
    with pytest.raises(ConfigError, match=r"LoRA adapts \(model.lora.target_modules=\['query', 'value'\]\)"):
        trained_new_modules(model, [query], ["query", "value"])
    with pytest.raises(ConfigError, match="outside any submodule"):
        trained_new_modules(model, ["nowhere"], ["query"])
