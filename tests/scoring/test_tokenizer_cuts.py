"""Where a tokenizer may cut a text (xlt/scoring/tokenizer_cuts.py): which tokenizers a long text may be cut for
and where (the tokenizer measures count long texts in parts there: tests/scoring/test_tokenizer_measures_cuts.py);
the LLM scorer's shared heads (xlt/scoring/llm/encoding.py) are tested in tests/scoring/llm/test_encoding.py."""

from __future__ import annotations

import unicodedata

from tests.scoring.sample_tokenizers import varied_texts
from xlt.scoring import tokenizer_cuts as tc
from xlt.scoring import tokenizer_measures as tm


def test_which_tokenizers_a_long_text_may_be_cut_for(any_tok, request):
    """Each is provably cut exactly at safe positions; the whole-text BPE only after a character none of
    its merges joins to the space marker after it."""
    kind = request.node.callspec.params["any_tok"]
    why, crossing = tc.exact_rule(any_tok)
    assert why == "" and tc.splittable(any_tok)
    assert bool(crossing) == (kind == "whole_text_bpe")
    if crossing:
        vocab = any_tok.backend_tokenizer.get_vocab()
        assert all(any(c + "▁" in piece for piece in vocab) for c in crossing)
        assert crossing == {"\n"}  # its merges join a line break to the space after it, never a letter


def test_a_long_text_is_cut_only_where_its_tokens_stay_the_same(any_tok):
    text = " ".join(varied_texts(3, 200, 20))
    crossing = tc.exact_rule(any_tok)[1]
    cuts, unsafe = tc.text_cuts(text, 500, crossing)
    parts = tc.text_parts(text, 500, crossing)
    assert "".join(text[a:b] for a, b in parts) == text and len(parts) > 5
    assert all(250 <= b - a <= 500 for a, b in parts[:-1])
    for k in cuts:
        safe = tc.safe_cut(text, k, crossing)
        assert text[k].isspace() and (safe or unsafe)
        # the tokens of the whole text around every cut, counted in two windowed parts, are the same
        assert tm._check_cut(any_tok.backend_tokenizer, text, k, 50, 10**9) == 0 or not safe
    assert not tc.safe_cut("a \u0301b", 1) and not tc.safe_cut("a \u0e33", 1) and not tc.safe_cut("\u0600 1", 1)
    assert not tc.safe_cut("a  b", 1) and tc.safe_cut("a b", 1) and tc.safe_cut("猫 b", 1)


def test_a_text_without_white_space_is_cut_between_graphemes():
    """No safe cut and no white space: a cut never separates a mark, a joiner or a variation selector from
    the character before it."""
    text = ("e\u0301" * 7 + "👩\u200d💻" + "猫\ufe0f") * 400
    cuts, unsafe = tc.text_cuts(text, 100)
    assert unsafe == len(cuts) > 10
    for k in cuts:
        assert not unicodedata.category(text[k]).startswith("M") and text[k] not in "\u200d\ufe0f"
        assert text[k - 1] != "\u200d"
