"""Fixtures shared by the scoring tests."""

from __future__ import annotations

import pytest

from tests.scoring.sample_tokenizers import byte_level_bpe, whole_text_bpe, wordpiece


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


@pytest.fixture(scope="module")
def tok():
    """The WordPiece tokenizer with a known vocabulary (:func:`tests.scoring.sample_tokenizers.wordpiece`)."""
    return wordpiece()


@pytest.fixture(scope="module", params=["wordpiece", "byte_level_bpe", "xlm_r", "whole_text_bpe"])
def any_tok(request, tok):
    if request.param == "wordpiece":
        return tok
    if request.param == "byte_level_bpe":
        return byte_level_bpe()
    if request.param == "whole_text_bpe":
        return whole_text_bpe()
    from transformers import AutoTokenizer

    from tests.me5 import me5_dir

    return AutoTokenizer.from_pretrained(me5_dir())  # XLM-R's: Precompiled, WhitespaceSplit + Metaspace
