"""LoRA through peft for a multiple-choice model: wrap, save (adapter + new weights), merge.

peft has no multiple-choice task type: every weight the checkpoint did not hold (the load report's missing
keys, ``model.xlt_new_weights``: the classifier head, and the pooler of a checkpoint saved without one, as
multilingual-e5) is initialised at random, so its module is trained and saved through ``modules_to_save``
(:func:`trained_new_modules`). Otherwise it would stay frozen at its random start, be missing from the
adapter, and be initialised again, differently, when the model is loaded for evaluation: the evaluated model
would not be the trained one. A new weight inside a module LoRA adapts cannot be trained that way: the run
refuses, saying so.
"""

from __future__ import annotations

from pathlib import Path

from xlt.config.model import LoraConfig
from xlt.errors import ConfigError
from xlt.run.layout import MODEL_BASE_DIR

# Folder (inside the saved adapter folder) holding the base weights when the base has no Hub id or
# path of its own (the offline tiny model is random-initialised from a config).
BASE_SUBDIR = MODEL_BASE_DIR  # the run directory layout's name (xlt.run)


# The multiple-choice head every AutoModelForMultipleChoice class of the supported encoders names so.
HEAD = "classifier"


def trained_new_modules(model, new_weights: list[str], target_modules: list[str]) -> list[str]:
    """The modules holding the newly initialised weights ``new_weights`` (names from the load report), to be
    trained and saved in full; always the head. Raises :class:`ConfigError` for a new weight LoRA would adapt
    (a target module) or one outside any submodule."""
    modules = dict(model.named_modules())
    out: list[str] = [HEAD]
    for key in new_weights:
        if key.startswith("("):  # "(all: random initialisation)": the tiny model, its base is saved whole
            continue
        owner = key.rsplit(".", 1)[0] if "." in key else ""
        if not owner or owner not in modules:
            raise ConfigError(f"model.lora.enabled=true: the checkpoint holds no weight {key!r}, which is newly "
                              "initialised outside any submodule LoRA could train and save; fine-tune it fully "
                              "(model.lora.enabled=false)")
        if any(owner == t or owner.endswith("." + t) for t in target_modules):
            raise ConfigError(f"model.lora.enabled=true: the checkpoint holds no weight {key!r}, newly initialised "
                              f"in a module LoRA adapts (model.lora.target_modules={list(target_modules)}): its "
                              "random weights would stay frozen; fine-tune fully (model.lora.enabled=false) or use "
                              "a checkpoint that holds them")
        if owner != HEAD and not owner.startswith(HEAD + ".") and owner not in out:
            out.append(owner)
    return out


def wrap_lora(model, lora_cfg: LoraConfig, new_weights: list[str] | None = None):
    """``model`` with LoRA adapters on ``lora_cfg.target_modules``; the head and every other module with
    newly initialised weights (``new_weights``, default ``model.xlt_new_weights``) trained and saved in full."""
    from peft import LoraConfig, get_peft_model

    new = list(getattr(model, "xlt_new_weights", []) if new_weights is None else new_weights)
    config = LoraConfig(
        r=lora_cfg.r,
        lora_alpha=lora_cfg.alpha,
        lora_dropout=lora_cfg.dropout,
        target_modules=list(lora_cfg.target_modules),
        modules_to_save=trained_new_modules(model, new, list(lora_cfg.target_modules)),
        bias="none",
    )
    return get_peft_model(model, config)


def point_adapter_at_base(adapter_dir: Path, base_ref: str) -> None:
    """Rewrite ``base_model_name_or_path`` in a saved adapter folder (e.g. to ``base_model``)."""
    import json

    path = Path(adapter_dir) / "adapter_config.json"
    data = json.loads(path.read_text())
    data["base_model_name_or_path"] = base_ref
    path.write_text(json.dumps(data, indent=2) + "\n")


def merge_and_save(peft_model, out_dir: Path, tokenizer=None) -> None:
    """Merge the adapters into the base weights and save a plain model (safetensors) to ``out_dir``.

    Merging modifies the model in place, so call this last.
    """
    merged = peft_model.merge_and_unload()
    merged.save_pretrained(out_dir)
    if tokenizer is not None:
        tokenizer.save_pretrained(out_dir)
