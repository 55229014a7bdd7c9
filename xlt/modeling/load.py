"""Load tokenizers and multiple-choice models: the offline tiny model, a local folder, or a Hub id.

Hub loads go through :func:`xlt.hub.hub_resource`, so a missing network or cache entry becomes a
clear error saying how to fix it. ``trust_remote_code`` is off unless the model config turns it on.
Encoder weights are loaded from safetensors, or, for a checkpoint that publishes only ``pytorch_model*.bin``,
from the pickle with torch's ``weights_only=True`` loader (:mod:`xlt.weights`, like the translator and LLM
loaders); the file read is logged.
``eval.model`` naming something that is not a loadable model folder is a :class:`ConfigError`.
Tokenizers loaded from the Hub are saved once under ``$XLT_CACHE/tokenizers`` and reloaded from there:
XLM-V ships a ~900k-piece SentencePiece model whose conversion takes minutes; it happens only once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from xlt.config.model import TINY_MODEL_ID, ModelConfig
from xlt.errors import ConfigError
from xlt.hub import hub_resource, is_local, looks_like_path
from xlt.modeling import packaged
from xlt.modeling.tiny import cache_dir, tiny_config, tiny_tokenizer
from xlt.run.files import atomic_dir
from xlt.weights import from_pretrained_kwargs, log_weights

log = logging.getLogger("xlt.modeling")


def _cached_tokenizer_dir(repo_id: str, revision: str | None) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "--", f"{repo_id}@{revision or 'main'}")
    return cache_dir() / "tokenizers" / safe


def load_tokenizer(model: ModelConfig | Any):
    """The tokenizer of ``model`` (a ModelConfig-like object)."""
    from transformers import AutoTokenizer

    name = model.tokenizer or model.name_or_path
    if name == TINY_MODEL_ID:
        return tiny_tokenizer(model.tiny.vocab_size)
    name = packaged.resolve(name)  # a model converted from a package: its folder in the cache
    if is_local(name):
        return AutoTokenizer.from_pretrained(name, trust_remote_code=model.trust_remote_code)
    cached = _cached_tokenizer_dir(name, model.revision)
    if (cached / "tokenizer_config.json").exists():
        return AutoTokenizer.from_pretrained(cached, trust_remote_code=model.trust_remote_code)
    key = "model.tokenizer" if model.tokenizer else "model.name_or_path"
    with hub_resource("tokenizer", name, model.revision, config_key=key):
        tok = AutoTokenizer.from_pretrained(name, revision=model.revision, trust_remote_code=model.trust_remote_code)
    with atomic_dir(cached) as tmp:
        tok.save_pretrained(tmp)
    return tok


def load_model(model: ModelConfig | Any, tokenizer=None, seed: int = 0):
    """A fresh ``AutoModelForMultipleChoice`` for ``model``: random init for the tiny model, pretrained
    weights otherwise. Every random number (the tiny model's weights, the new classifier head of a
    pretrained checkpoint) is drawn after ``transformers.set_seed(seed)``, as HF's ``run_swag.py`` does:
    the same seed gives the same initial model, another seed another head.

    The names of the weights the checkpoint did not hold (newly initialised: the MC head of an encoder
    saved without one) are logged and kept in ``model.xlt_new_weights`` for the model card.
    """
    from transformers import AutoModelForMultipleChoice, set_seed

    set_seed(seed)
    if model.name_or_path == TINY_MODEL_ID:
        tokenizer = tokenizer if tokenizer is not None else load_tokenizer(model)
        net = AutoModelForMultipleChoice.from_config(tiny_config(tokenizer, model.tiny, model.max_length))
        net.xlt_new_weights = ["(all: random initialisation)"]
        return net
    name = packaged.resolve(model.name_or_path)
    revision = None if is_local(name) else model.revision
    kwargs: dict[str, Any] = {"trust_remote_code": model.trust_remote_code, "output_loading_info": True,
                              **from_pretrained_kwargs(name, revision, bool(model.use_safetensors))}
    if is_local(name):
        net, info = AutoModelForMultipleChoice.from_pretrained(name, **kwargs)
    else:
        with hub_resource("model", model.name_or_path, model.revision, config_key="model.name_or_path"):
            net, info = AutoModelForMultipleChoice.from_pretrained(model.name_or_path, revision=model.revision,
                                                                    **kwargs)
    log_weights("model.name_or_path", name, revision)
    net.xlt_new_weights = sorted(info.get("missing_keys") or [])
    if net.xlt_new_weights:
        log.info("%s holds no weights for %s: newly initialised (seed %d)", model.name_or_path,
                 ", ".join(net.xlt_new_weights), seed)
    return net


def load_trained(path: str | Path, trust_remote_code: bool = False, revision: str | None = None):
    """A trained multiple-choice model and its tokenizer from a folder (``run/model``) or a Hub id.

    A folder holding a LoRA adapter (``adapter_config.json``) is loaded with peft on its base model.
    """
    from transformers import AutoModelForMultipleChoice, AutoTokenizer

    path = str(path)
    check_model_folder(path)
    if is_local(path) and (Path(path) / "adapter_config.json").exists():
        from peft import PeftConfig, PeftModel  # peft has no MC auto class: load base + adapter

        peft_cfg = PeftConfig.from_pretrained(path)
        base_ref = peft_cfg.base_model_name_or_path
        # A base stored inside the adapter folder (the tiny model has no Hub id) is named relative to it;
        # a model converted from a package is named by its id (converted again if the cache lost it).
        if base_ref and (Path(path) / base_ref).is_dir():
            base_ref = str(Path(path) / base_ref)
        base_ref = packaged.resolve(base_ref)
        with _unloadable(path):
            base = AutoModelForMultipleChoice.from_pretrained(base_ref, trust_remote_code=trust_remote_code,
                                                              **from_pretrained_kwargs(base_ref))
            return PeftModel.from_pretrained(base, path), AutoTokenizer.from_pretrained(path)
    kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    if is_local(path):
        with _unloadable(path):
            net = AutoModelForMultipleChoice.from_pretrained(path, **kwargs, **from_pretrained_kwargs(path))
            log_weights("eval.model", path)
            return net, AutoTokenizer.from_pretrained(path)
    with hub_resource("model", path, revision, config_key="eval.model"):
        net = AutoModelForMultipleChoice.from_pretrained(path, revision=revision, **kwargs,
                                                         **from_pretrained_kwargs(path, revision))
        log_weights("eval.model", path, revision)
        return net, AutoTokenizer.from_pretrained(path, revision=revision)


FIX = "point eval.model at a trained run's model/ folder (written by the train stage) or at a Hub model id"


def check_model_folder(path: str) -> None:
    """Raise :class:`ConfigError` if ``path`` is local but not a model folder (config.json or adapter)."""
    p = Path(path).expanduser()
    if not p.exists():
        if looks_like_path(path):
            raise ConfigError(f"eval.model={path}: no such folder; {FIX}")
        return  # a Hub id
    if not p.is_dir():
        raise ConfigError(f"eval.model={path}: a file, not a model folder; {FIX}")
    if not (p / "config.json").is_file() and not (p / "adapter_config.json").is_file():
        found = sorted(x.name for x in p.iterdir())[:8]
        raise ConfigError(f"eval.model={path}: not a model folder (no config.json or adapter_config.json; "
                          f"it holds {found}); {FIX}")


@contextlib.contextmanager
def _unloadable(path: str) -> Iterator[None]:
    """Turn the errors of loading a broken local model folder into a :class:`ConfigError`."""
    try:
        yield
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as err:
        if isinstance(err, ConfigError):
            raise
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(f"eval.model={path}: the folder cannot be loaded as a multiple-choice model "
                          f"({first[:300]}); {FIX}") from None
