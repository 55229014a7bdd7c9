"""Fixtures for the training-set tests: the upstream-schema writers and a small build context."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

_WRITERS = Path(__file__).resolve().parents[1] / "fixtures" / "sources" / "upstream.py"


def _load_writers():
    spec = importlib.util.spec_from_file_location("xlt_test_upstream_writers", _WRITERS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


up = _load_writers()


@pytest.fixture
def upstream():
    """The upstream-schema writers (tests/fixtures/sources/upstream.py)."""
    return up


@pytest.fixture
def ctx():
    from xlt.data.sources import BuildContext

    return BuildContext(seed=7, max_passage_sentences=25)
