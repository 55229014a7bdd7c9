"""Keep secrets (W&B keys, HF tokens) out of logs, configs and results."""

from __future__ import annotations

import re
from typing import Any

from omegaconf import DictConfig, OmegaConf

# A key component that names a secret (``hf_token``, ``api_key``, ``password``), not ``tokenizer`` or
# ``max_new_tokens``.
_SECRET_KEY = re.compile(r"(^|[_-])(api[_-]?key|access[_-]?key|token|secret|password|passwd|auth)([_-]|$)", re.IGNORECASE)
# Hugging Face tokens; W&B keys are 40 hex characters like git revisions, so they are caught by key name.
_SECRET_VALUE = re.compile(r"^hf_[A-Za-z0-9]{20,}$")
REDACTED = "***"


def redact(obj: Any) -> Any:
    """Return a copy of a nested dict/list with secret-looking keys and values replaced by ``***``."""
    if isinstance(obj, dict):
        return {k: (REDACTED if _SECRET_KEY.search(str(k)) and v not in (None, "") else redact(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact(v) for v in obj]
    if isinstance(obj, str) and _SECRET_VALUE.match(obj):
        return REDACTED
    return obj


def is_secret_key(key: str) -> bool:
    """Whether a config key names a secret (e.g. ``model.hf_token``, ``logger.api_key``)."""
    return bool(_SECRET_KEY.search(key.rsplit(".", 1)[-1]))


def redact_overrides(overrides: list[str]) -> list[str]:
    """Command-line overrides with secret-looking values replaced by ``***``."""
    out = []
    for ov in overrides:
        key, eq, value = ov.partition("=")
        out.append(f"{key}={REDACTED}" if eq and (is_secret_key(key) or _SECRET_VALUE.match(value)) else ov)
    return out


def redact_config(cfg: DictConfig) -> DictConfig:
    return OmegaConf.create(redact(OmegaConf.to_container(cfg, resolve=True)))
