"""File inputs that several stages declare (:attr:`xlt.contract.StageSpec.files`): a local input's
fingerprint, a model's (a packaged one included), what the ``translate`` group's translator computes
from (the translate stage, and translate-test in the evaluate stage), and the train stage's file inputs,
which the evaluate and report stages read too (they identify the model before fine-tuning).

A shared helper of the stages, not a stage: every stage module may import it, and it imports none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from xlt.config.keys import translator_values
from xlt.config.model import TINY_MODEL_ID
from xlt.config.translate import translate_train_all
from xlt.errors import DataError
from xlt.modeling import packaged, packaged_llm
from xlt.run.fingerprint import path_fingerprint, resource_fingerprint
from xlt.run.layout import RunDir
from xlt.translation import engines, resolution


def local_fingerprint(path: Any) -> str | None:
    """Fingerprint of a local input (None when absent); a file in it that the OS cannot open (a symbolic-link
    loop, no permission) is a :class:`DataError` naming it."""
    if not (path and Path(str(path)).expanduser().exists()):
        return None
    try:
        return path_fingerprint(path)
    except OSError as err:
        bad = err.filename or path
        raise DataError(f"{bad}: cannot be read ({err.strerror or err}), an input of this run ({path}); replace it "
                        "with the data file (a symbolic link must point at a readable file) or remove it") from None


def model_fingerprint(name_or_path: str | None, revision: str | None = None) -> str | None:
    """:func:`xlt.run.fingerprint.resource_fingerprint`, and for a model converted from an installed package
    (:mod:`xlt.modeling.packaged`, :mod:`xlt.modeling.packaged_llm`) the converted folder's content."""
    if packaged.is_packaged(name_or_path):
        return f"{name_or_path}:{path_fingerprint(packaged.checkpoint_dir())}"
    if packaged_llm.is_packaged_llm(name_or_path):
        return f"{name_or_path}:{path_fingerprint(packaged_llm.checkpoint_dir())}"
    return resource_fingerprint(name_or_path, revision)


def translator_inputs(cfg: Any, run: RunDir | None = None) -> dict[str, Any]:
    """What the ``translate`` group's translator computes from: its settings (the schema's ``translator``
    keys, :func:`xlt.config.keys.translator_values`), its checkpoint (a local folder's fingerprint, or the
    commit the Hub cache resolves its revision to) and what it resolves to (engine, dtype or compute type:
    :func:`xlt.translation.engines.resolved_settings`), as ``run`` recorded it once for all its shards,
    requeues and readers (:mod:`xlt.translation.resolution`; this machine's resolution until it is recorded)."""
    t = cfg.translate
    hf = engines.reads_checkpoint(t)
    resolved = resolution.resolve(cfg.translate, run)
    return {"settings": translator_values(cfg),
            "model": resource_fingerprint(t.model_name_or_path, t.revision) if hf else None,
            "resolved": resolved}


def train_stage_files(cfg: Any, run: RunDir) -> dict[str, Any]:
    """The train stage's file inputs (its :attr:`~xlt.contract.StageSpec.files`): the base checkpoint and
    tokenizer, and the translate-train-all sampling. The evaluate and report stages read the same to identify
    the model before fine-tuning (``eval.before_training``)."""
    m = cfg.model
    built = m.name_or_path == TINY_MODEL_ID  # built offline from model.tiny (config keys)
    return {"model.name_or_path": None if built else model_fingerprint(m.name_or_path, m.revision),
            "model.tokenizer": model_fingerprint(m.tokenizer, m.revision),
            "translate.sampling": OmegaConf.to_container(cfg.translate.sampling) if translate_train_all(cfg) else None}
