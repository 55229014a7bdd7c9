"""Keep secrets (W&B keys, HF tokens) out of logs, configs and results."""

from __future__ import annotations

import re
from typing import Any

from omegaconf import DictConfig, OmegaConf

from xlt.errors import ConfigError

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


def redact_config(config: DictConfig) -> DictConfig:
    """A copy of ``config`` (any config node, resolved) with secret-looking keys and values replaced by ``***``."""
    return OmegaConf.create(redact(OmegaConf.to_container(config, resolve=True)))


# The last key of an override that holds a secret: hf_token, api_key, wandb_api_key, password, secret...
_SECRET_OVERRIDE_KEY = re.compile(r"(^|[_-])(token|api[_-]?key|secret|password|passwd)$", re.IGNORECASE)


def secret_override(override: str) -> str | None:
    """The key of a command-line override that carries a secret (by key name or value), else None.

    ``+model.hf_token=hf_xxx``, ``logger.api_key=...``, ``++x.password=...`` and any value that looks like a
    Hugging Face token are secrets; ``~key`` deletions and keys with an empty value are not.
    """
    text = override.strip()
    if text.startswith("~") or "=" not in text:
        return None
    key, _, value = text.lstrip("+").partition("=")
    value = value.strip().strip("'\"")
    if not value or value.lower() in ("null", "none"):
        return None
    last = key.strip().rsplit(".", 1)[-1]
    flag = value.lower() in ("true", "false") or value.lstrip("-").isdigit()  # add_bos_token=true is no secret
    if (_SECRET_OVERRIDE_KEY.search(last) and not flag) or _SECRET_VALUE.match(value):
        return key.strip()
    return None


def reject_secret_overrides(overrides: list[str]) -> None:
    """Raise :class:`ConfigError` if an override passes a secret: it would be stored in the run directory's
    name, its config and its call log. Secrets belong in the environment (``HF_TOKEN``,
    ``WANDB_API_KEY``) or the tools' own login (``huggingface-cli login``, ``wandb login``)."""
    for override in overrides:
        key = secret_override(str(override))
        if key is not None:
            raise ConfigError(
                f"override '{key}=***' passes a secret on the command line, where it would be saved in the run "
                "directory name, its config and its call log; set it in the environment instead (HF_TOKEN, "
                "WANDB_API_KEY) or log in once (huggingface-cli login, wandb login)"
            )


# A Hugging Face token anywhere in a text (real ones are ``hf_`` and 34 letters and digits).
_SECRET_IN_TEXT = re.compile(r"hf_[A-Za-z0-9]{30,}")
# The environment variables that hold the tokens xlt's tools read.
SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "WANDB_API_KEY")


def secrets_in(text: str, known: dict[str, str] | None = None) -> list[str]:
    """What secrets ``text`` holds, by name (never the value): a Hugging Face token by its form, and any of
    ``known`` ({name: value}, e.g. the environment's tokens; values under 8 characters are ignored)."""
    found = [name for name, value in (known or {}).items() if value and len(value) >= 8 and value in text]
    if _SECRET_IN_TEXT.search(text) and not found:
        found.append("a Hugging Face token (hf_...)")
    return found
