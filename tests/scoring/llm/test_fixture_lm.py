"""The tiny test LM's tokenizer: every answer letter " A".." Z" is one token (a benchmark may have up to 26
options), and it learns the option texts of rows that nest them (X-CSQA's ``question.choices[].text``)."""

from __future__ import annotations

import string

from tests.fixtures.llm import build_tiny_lm, corpus
from tests.fixtures.plugin.xcsqa import write_data


def test_letters_are_one_token_and_nested_option_texts_are_learned(tmp_path):
    data = write_data(tmp_path / "xcsqa")
    texts = corpus([data])
    assert "near the river" in texts and "Where would you find a river?" in texts  # nested and top-level strings
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(build_tiny_lm(tmp_path / "lm", texts, layers=1, hidden=16))
    assert {c: len(tok(" " + c, add_special_tokens=False)["input_ids"]) for c in string.ascii_uppercase} == \
        dict.fromkeys(string.ascii_uppercase, 1)
    assert len(tok("near the river", add_special_tokens=False)["input_ids"]) < len("near the river") / 2
