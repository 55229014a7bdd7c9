"""LoRA through peft for a multiple-choice model: wrap, save (adapter + head), merge.

peft has no multiple-choice task type, so the new classifier head is trained and saved through
``modules_to_save=["classifier"]``; without it the head would stay random and be lost on save.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Folder (inside the saved adapter folder) holding the base weights when the base has no Hub id or
# path of its own (the offline tiny model is random-initialised from a config).
BASE_SUBDIR = "base_model"


def wrap_lora(model, lora_cfg: Any):
    """``model`` with LoRA adapters on ``lora_cfg.target_modules`` and a trainable, saved classifier."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=lora_cfg.r,
        lora_alpha=lora_cfg.alpha,
        lora_dropout=lora_cfg.dropout,
        target_modules=list(lora_cfg.target_modules),
        modules_to_save=["classifier"],
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
