"""Schema of the ``training`` group (conf/training/*.yaml): optimisation, dev evaluation, checkpointing.

Values map onto ``transformers.TrainingArguments`` in :mod:`xlt.training.args`.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from xlt.config.fields import neutral, opt
from xlt.config.paths import CONF_DIR
from xlt.errors import ConfigError

DEEPSPEED_DIR = Path(CONF_DIR) / "deepspeed"
PRECISIONS = ("auto", "bf16", "fp16", "fp32")


def transformers_enum(module: str, name: str) -> tuple[str, ...]:
    """The values of the string enum ``name`` in ``transformers/<module>.py`` of the installed transformers,
    read from its source: importing that module imports torch (seconds at every command line, before a
    config error could be shown). tests/config/test_config_validation.py checks them against the enum itself."""
    spec = importlib.util.find_spec("transformers")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("transformers is not installed: pip install 'transformers>=5.24'")
    source = Path(next(iter(spec.submodule_search_locations))) / f"{module}.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    enum = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    return tuple(stmt.value.value for stmt in enum.body if isinstance(stmt, ast.Assign)
                 and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str))


def lr_schedulers() -> tuple[str, ...]:
    """The scheduler names the installed transformers accepts (``trainer_utils.SchedulerType``)."""
    return transformers_enum("trainer_utils", "SchedulerType")


def optimizers() -> tuple[str, ...]:
    """The optimizer names the installed transformers accepts (``training_args.OptimizerNames``)."""
    return transformers_enum("training_args", "OptimizerNames")


@dataclass
class TrainingConfig:
    learning_rate: float = opt(2e-5, ge=0)
    num_train_epochs: float = opt(3.0, gt=0)
    # Stop after this many optimizer steps (-1: train num_train_epochs).
    max_steps: int = opt(-1, ge=-1)
    per_device_train_batch_size: int = opt(16, ge=1)
    per_device_eval_batch_size: int = opt(32, ge=1)
    gradient_accumulation_steps: int = opt(1, ge=1)
    # Fraction of the optimizer steps spent warming the learning rate up.
    warmup_ratio: float = opt(0.1, ge=0, le=0.999)
    weight_decay: float = opt(0.01, ge=0)
    max_grad_norm: float = opt(1.0, gt=0)
    # Keep the pretrained word embeddings fixed (full fine-tuning; LoRA freezes them anyway): the rows of
    # tokens that English training never sees stay where pretraining put them, and the optimizer holds no
    # state for the (often largest) matrix of a multilingual encoder: 96M of multilingual-e5-small's 118M.
    freeze_word_embeddings: bool = False
    # Checked against transformers' own enums when the config is validated (before any stage runs).
    lr_scheduler_type: str = opt("linear", choices=lr_schedulers)
    optim: str = opt("adamw_torch", choices=optimizers)
    logging_steps: int = neutral(20, ge=1, why="how often the loss is logged")
    # Evaluate on the dev split every eval_steps and checkpoint at the same steps (save_steps: None or
    # equal to eval_steps), so the best dev checkpoint is always a saved one, restored at the end.
    eval_steps: int = opt(200, ge=1)
    save_steps: int | None = opt(None, ge=1)
    # Training checkpoints kept (plus the best one); each holds optimizer, scheduler and RNG state.
    save_total_limit: int = neutral(2, ge=1, why="how many checkpoints are kept on disk (the best one always is)")
    # Stop when dev accuracy has not improved for this many evaluations (None: never).
    early_stopping_patience: int | None = opt(None, ge=1)
    # "auto": bf16 where the GPU supports it, fp32 otherwise. "bf16", "fp16" or "fp32" to force.
    precision: str = opt("auto", choices=PRECISIONS)
    # Batch examples of similar length together (less padding, same results in expectation).
    group_by_length: bool = True
    # DeepSpeed config: a name in conf/deepspeed ("zero2", "zero3_offload"), or a path to a JSON file.
    deepspeed: str | None = None
    dataloader_num_workers: int = neutral(0, ge=0, why="loader processes; the batches and their order are seeded the same")
    gradient_checkpointing: bool = False
    # Resume from the last checkpoint in <run>/checkpoints when there is one.
    resume: bool = neutral(True, why="resuming restores the exact optimizer, scheduler and data state")
    # Collapse detector: after warmup, a dev accuracy within collapse_margin of chance (1/4) for
    # collapse_patience evaluations in a row is a collapse; warn loudly, and stop the run with an
    # error when stop_on_collapse.
    collapse_margin: float = opt(0.03, ge=0, le=0.75)
    collapse_patience: int = opt(2, ge=1)
    stop_on_collapse: bool = True
    # Train/evaluate on at most this many rows of each split (debugging); None: all.
    max_train_rows: int | None = opt(None, ge=1)
    max_dev_rows: int | None = opt(None, ge=1)


def resolve_deepspeed(value: str | None, conf_dir: Path = DEEPSPEED_DIR) -> str | None:
    """Path of the DeepSpeed JSON named by ``training.deepspeed``: a name in conf/deepspeed or a path.

    The file is parsed here, so a typo or broken JSON fails before any model is loaded.
    """
    if not value:
        return None
    candidates = [Path(value).expanduser()]
    if "/" not in value:
        name = value if value.endswith(".json") else f"{value}.json"
        candidates.append(conf_dir / name)
    for path in candidates:
        if path.is_file():
            try:
                json.loads(path.read_text())
            except json.JSONDecodeError as err:
                raise ConfigError(f"training.deepspeed: {path} is not valid JSON (line {err.lineno}): {err.msg}") from None
            return str(path.resolve())
    names = sorted(p.stem for p in conf_dir.glob("*.json"))
    raise ConfigError(f"training.deepspeed={value!r}: no such file; use a path or one of {names}")
