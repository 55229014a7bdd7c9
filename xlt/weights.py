"""Which weights file a checkpoint is loaded from: checkpoints load as they are published.

Some default checkpoints publish only pickle weights on their main branch (``facebook/nllb-200-distilled-600M``
has ``pytorch_model.bin`` only; its safetensors sit on a Hub PR branch). xlt prefers safetensors and, when a
checkpoint has none, reads ``pytorch_model.bin`` (or its sharded index) with torch's ``weights_only=True``
loader, which transformers uses for ``.bin`` files: it rebuilds tensors and refuses any other pickled object,
so no code from the file runs. (The other option, resolving the conversion PR branch at prefetch time, pins
a revision nobody reviewed and that the model card does not name; the weights there are the same.)

:func:`weights_file` finds the file from a local folder or the Hugging Face cache, never the network;
:func:`from_pretrained_kwargs` turns it into the ``use_safetensors`` argument of ``from_pretrained``;
:func:`log_weights` logs the file a loader read; :func:`snapshot` fetches exactly those files (the prefetch
and CTranslate2 conversion downloads).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from xlt.errors import XltError

log = logging.getLogger("xlt")

SAFETENSORS = ("model.safetensors", "model.safetensors.index.json")
PICKLE = ("pytorch_model.bin", "pytorch_model.bin.index.json")
# Files of a snapshot besides the weights: configs, tokenizers, generation configs, vocabularies.
BASE_PATTERNS = ["*.json", "*.model", "*.txt", "tokenizer*", "*.tiktoken", "*.py.lock"]
SAFETENSORS_PATTERNS = ["*.safetensors"]
PICKLE_PATTERNS = ["pytorch_model*.bin"]


def weights_file(name_or_path: str, revision: str | None = None) -> str | None:
    """The weights file ``from_pretrained`` reads for this checkpoint (safetensors first, then the pickle;
    a single file before a sharded index), from a local folder or the Hub cache. None: not known locally."""
    local = Path(str(name_or_path)).expanduser()
    if local.exists():
        return next((n for n in SAFETENSORS + PICKLE if (local / n).is_file()), None)
    try:
        from huggingface_hub import try_to_load_from_cache

        for name in SAFETENSORS + PICKLE:
            if isinstance(try_to_load_from_cache(str(name_or_path), name, revision=revision), str):
                return name
    except Exception:  # a malformed id or an unreadable cache: unknown
        return None
    return None


def from_pretrained_kwargs(name_or_path: str, revision: str | None = None, prefer_safetensors: bool = True) -> dict[str, Any]:
    """``use_safetensors`` for ``from_pretrained``: True when the checkpoint has safetensors weights, False when
    it has only ``pytorch_model*.bin`` (read with ``weights_only=True``), left to transformers (safetensors
    first, else the pickle) when nothing is known locally."""
    found = weights_file(name_or_path, revision)
    if found is None:
        return {} if prefer_safetensors else {"use_safetensors": False}
    return {"use_safetensors": prefer_safetensors and found in SAFETENSORS}


def describe(name: str | None) -> str:
    if name in PICKLE:
        return f"{name} (no safetensors published; read with torch.load(weights_only=True))"
    return name or "the file transformers chose"


def log_weights(what: str, name_or_path: str, revision: str | None = None) -> str | None:
    """Log which weights file ``what`` (e.g. "translate model") was loaded from; return its name."""
    name = weights_file(name_or_path, revision)
    log.info("%s %s: weights from %s", what, name_or_path, describe(name))
    return name


def snapshot(repo_id: str, revision: str | None = None, local_only: bool = False) -> str:
    """Download (or find in the cache) what loading ``repo_id`` reads: configs and tokenizer files, and its
    safetensors weights, or its ``pytorch_model*.bin`` when it publishes no safetensors. Return the folder."""
    from huggingface_hub import snapshot_download  # lazy: start-up time

    folder = snapshot_download(repo_id, revision=revision, allow_patterns=BASE_PATTERNS + SAFETENSORS_PATTERNS,
                               local_files_only=local_only)
    if not any(Path(folder).rglob("*.safetensors")):
        folder = snapshot_download(repo_id, revision=revision, allow_patterns=BASE_PATTERNS + PICKLE_PATTERNS,
                                   local_files_only=local_only)
        if not any(Path(folder).rglob("*.bin")):
            raise XltError(f"{repo_id}: no safetensors or pytorch_model*.bin weights in the snapshot at {folder}")
    return folder
