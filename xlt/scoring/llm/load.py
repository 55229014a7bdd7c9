"""Loading a causal LM and its tokenizer for scoring (safetensors, else the published ``pytorch_model*.bin``
read with ``weights_only=True``: :mod:`xlt.weights`; no remote code)."""

from __future__ import annotations

from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from xlt.config.llm import LLMConfig
from xlt.errors import ConfigError
from xlt.hub import hub_resource, is_local
from xlt.modeling import packaged_llm
from xlt.weights import from_pretrained_kwargs, log_weights

MODES = ("loglikelihood", "generate")
SCORE_DTYPES = ("harness", "float32")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def llm_config(llm: DictConfig | dict[str, Any] | LLMConfig | None) -> DictConfig:
    """The ``eval.llm`` section (None: absent), checked against :class:`LLMConfig`."""
    node = llm
    if node is None:
        raise ConfigError("eval.llm is missing: an LLM evaluation needs eval.llm.model=<hub id or path>")
    try:
        merged = OmegaConf.merge(OmegaConf.structured(LLMConfig), node)
    except Exception as err:
        key = getattr(err, "full_key", "") or ""
        raise ConfigError(f"invalid eval.llm key '{key}': {str(err).splitlines()[0]}") from None
    if not merged.model:
        raise ConfigError("eval.llm.model is not set: give a Hub id or a local path (eval.llm.model=...)")
    if merged.mode not in MODES:
        raise ConfigError(f"eval.llm.mode must be one of {list(MODES)}, got '{merged.mode}'")
    if merged.fewshot_sampler not in ("auto", "first_n", "random"):
        raise ConfigError(f"eval.llm.fewshot_sampler must be auto, first_n or random, got '{merged.fewshot_sampler}'")
    if merged.dtype != "auto" and merged.dtype not in DTYPES:
        raise ConfigError(f"eval.llm.dtype must be auto or one of {list(DTYPES)}, got '{merged.dtype}'")
    if merged.score_dtype not in SCORE_DTYPES:
        raise ConfigError(f"eval.llm.score_dtype must be one of {list(SCORE_DTYPES)}, got '{merged.score_dtype}'")
    if merged.num_fewshot < 0 or merged.batch_size < 1:
        raise ConfigError("eval.llm.num_fewshot must be >= 0 and eval.llm.batch_size >= 1")
    return merged


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    if name == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    return DTYPES[name]


def load_tokenizer(llm: DictConfig) -> Any:
    """The tokenizer of ``eval.llm`` (``eval.llm.tokenizer``, else the model's)."""
    from transformers import AutoTokenizer

    model_name = packaged_llm.resolve(llm.model)
    revision = None if is_local(model_name) else llm.revision
    tok_name = packaged_llm.resolve(llm.tokenizer) if llm.tokenizer else model_name
    tok_key = "eval.llm.tokenizer" if llm.tokenizer else "eval.llm.model"
    with hub_resource("tokenizer", tok_name, revision, tok_key):
        return AutoTokenizer.from_pretrained(
            tok_name, revision=None if is_local(tok_name) else llm.revision, trust_remote_code=False
        )


def load_causal_lm(llm: DictConfig) -> tuple[Any, Any, torch.device]:
    """Model (eval mode, on its device), tokenizer and device for ``eval.llm``."""
    from transformers import AutoModelForCausalLM

    device = resolve_device(llm.device)
    dtype = resolve_dtype(llm.dtype, device)
    # A model converted from an installed package (xlt.modeling.packaged_llm): its folder in xlt's cache.
    model_name = packaged_llm.resolve(llm.model)
    revision = None if is_local(model_name) else llm.revision
    tokenizer = load_tokenizer(llm)
    with hub_resource("model", model_name, revision, "eval.llm.model"):
        model = AutoModelForCausalLM.from_pretrained(
            model_name, revision=revision, dtype=dtype, trust_remote_code=False,
            **from_pretrained_kwargs(model_name, revision)
        )
    log_weights("eval.llm.model", model_name, revision)
    model.to(device).eval()
    return model, tokenizer, device
