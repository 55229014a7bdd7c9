"""The model card (README.md) written next to the trained model.

The evaluation section is a placeholder between two markers; the report stage replaces the text
between them with its results (:func:`fill_evaluation_section`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xlt.config.data import DataConfig
from xlt.config.eval import EvalConfig
from xlt.config.model import PACKAGED_MODEL_IDS, ModelConfig
from xlt.config.training import TrainingConfig
from xlt.hub import is_local
from xlt.markdown import markdown_table
from xlt.modeling.packaged import source_text
from xlt.run.files import atomic_write_text

EVAL_BEGIN = "<!-- xlt:evaluation:begin -->"
EVAL_END = "<!-- xlt:evaluation:end -->"


def _front_matter(base_model: str | None, lora: bool, benchmarks: list[str] | None = None) -> str:
    lines = ["---", "library_name: peft" if lora else "library_name: transformers", "pipeline_tag: multiple-choice"]
    if base_model:
        lines.append(f"base_model: {base_model}")
    # The benchmark kinds the run's config evaluates on are tags too.
    lines += ["tags:", "- xlt", "- multiple-choice", "- cross-lingual-transfer", *(f"- {b}" for b in benchmarks or []), "---"]
    return "\n".join(lines)


def render_card(model: ModelConfig, training: TrainingConfig, data: DataConfig, eval_cfg: EvalConfig,
                summary: dict[str, Any], data_info: dict[str, Any], *, seed: int, recipe_name: str,
                description: str, train_all: bool) -> str:
    """Markdown model card for a run: base model, recipe, data, hyperparameters, dev results.

    ``data``: its enabled sources are named; ``eval_cfg``: its benchmark kinds are tags; ``train_all``: the run
    trains on the translate-train-all union (:func:`xlt.config.translate.translate_train_all`)."""
    m, t = model, training
    lora = bool(m.lora.enabled)
    local = m.name_or_path != "xlt-tiny" and is_local(m.name_or_path)
    converted = m.name_or_path in PACKAGED_MODEL_IDS
    # ``base_model`` is a Hub id on the Hub: the tiny model has none, a local folder is named, not linked,
    # and a model converted from a package is not the Hub checkpoint it derives from (4-bit weights).
    base = None if m.name_or_path == "xlt-tiny" or local or converted else m.name_or_path
    rev = f" (revision `{m.revision}`)" if m.revision and not local and not converted else ""
    base_text = f"local checkpoint `{Path(m.name_or_path).name}`" if local else f"`{m.name_or_path}`"
    if converted:
        base_text = source_text()
    new_weights = summary.get("new_weights") or []
    if m.name_or_path == "xlt-tiny":
        head = "randomly initialised with the whole model (no pretraining)"
    elif new_weights:
        head = (f"newly initialised (seed {seed}; the checkpoint holds no weights for "
                f"{', '.join(f'`{k}`' for k in new_weights)})")
    else:
        head = "loaded from the checkpoint (it already held a multiple-choice head)"
    sources = sorted(name for name, src in data.sources.items() if getattr(src, "enabled", True))
    hyper = {
        "learning_rate": t.learning_rate,
        # The micro-batches' losses are averaged (xlt.training.trainer.MCTrainer): it trains as one batch of this size.
        "effective batch size (per device x accumulation x processes)": (
            f"{summary.get('effective_batch_size')} ({t.per_device_train_batch_size} x {t.gradient_accumulation_steps}"
            f" x {summary.get('world_size', 1)})"),
        "epochs": t.num_train_epochs if t.max_steps < 0 else f"max_steps={t.max_steps}",
        "warmup ratio": t.warmup_ratio,
        "weight decay": t.weight_decay,
        "scheduler": t.lr_scheduler_type,
        "precision": summary.get("precision"),
        "max_length": m.max_length,
        "seed": seed,
        "DeepSpeed": t.deepspeed or "no",
        "LoRA": f"r={m.lora.r}, alpha={m.lora.alpha}, targets={list(m.lora.target_modules)}" if lora else "no (full fine-tuning)",
    }
    hyper_table = markdown_table(["setting", "value"], hyper.items()).rstrip("\n")
    setting = "translate-train-all (English + translations)" if train_all else "English (zero-shot transfer)"
    splits = ", ".join(f"{k}: {v} rows" for k, v in data_info.items())
    history = summary.get("dev_accuracy_history") or []
    dev_table = markdown_table(["step", "dev accuracy"],
                               [[h["step"], f"{h['accuracy']:.4f}"] for h in history] or [["-", "-"]]).rstrip("\n")
    kinds = sorted({str(b.kind) for b in (eval_cfg.benchmarks or {}).values() if b.enabled})
    return f"""{_front_matter(base, lora, kinds)}

# {recipe_name}: {m.name} fine-tuned for multiple-choice reading comprehension

{description}

Trained with xlt, recipe `{recipe_name}`.

- **Base model:** {base_text}{rev}
- **Head:** `AutoModelForMultipleChoice` (4 options, passage truncated, question and option kept); {head}
- **Training setting:** {setting}
- **Training data:** {splits} (sources: {", ".join(sources) or "n/a"})
- **Format:** {"LoRA adapter (with the classifier head and every other newly initialised weight trained and saved in modules_to_save); load with `xlt.modeling.load.load_trained`" if lora else "full model, safetensors"}

## Training hyperparameters

{hyper_table}

Mean training loss **{summary.get("train_loss", float("nan")):.4f}** over {summary.get("global_step")} optimizer steps
(each step's loss is the mean over its examples, also with gradient accumulation).

## Dev results (English dev split)

Best dev accuracy **{summary.get("best_dev_accuracy", float("nan")):.4f}** at step {summary.get("best_step")}
(the checkpoint kept as the final model). Dev accuracy during training:

{dev_table}

## Evaluation results

{EVAL_BEGIN}
Not evaluated yet: the `report` stage fills in the benchmark results here.
{EVAL_END}

## How to use

```python
from xlt.modeling.load import load_trained
model, tokenizer = load_trained("path/to/this/folder")
```
"""


def fill_evaluation_section(card_path: str | Path, markdown: str) -> None:
    """Replace the evaluation placeholder in a written card with ``markdown`` (used by the report stage)."""
    path = Path(card_path)
    text = path.read_text(encoding="utf-8")
    start, end = text.find(EVAL_BEGIN), text.find(EVAL_END)
    if start < 0 or end < start:
        raise ValueError(f"{path}: no evaluation section markers ({EVAL_BEGIN} ... {EVAL_END})")
    new = text[: start + len(EVAL_BEGIN)] + "\n" + markdown.strip() + "\n" + text[end:]
    atomic_write_text(path, new)
