"""Fixtures shared by the scoring tests."""

from __future__ import annotations

import pytest


def build_tiny_mc(path):
    """The tiny random-init XLM-R multiple-choice model (seed 0) and its tokenizer, also saved to ``path``:
    ``(path, model, tokenizer)``."""
    from xlt.config.model import ModelConfig
    from xlt.modeling.load import load_model, load_tokenizer

    mcfg = ModelConfig()
    tok = load_tokenizer(mcfg)
    model = load_model(mcfg, tok, seed=0).eval()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path, model, tok


@pytest.fixture(scope="session")
def tiny_mc(tmp_path_factory):
    """:func:`build_tiny_mc` once per session (~15 s on a loaded 2-core machine)."""
    return build_tiny_mc(tmp_path_factory.mktemp("tiny_mc"))
