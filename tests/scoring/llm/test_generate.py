"""Zero-shot generation: answer-letter extraction, batched greedy decoding, unparseable answers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from xlt.run.layout import RunDir
from xlt.scoring.llm.generate import GreedyGenerator, extract_letter
from xlt.scoring.llm.scorer import LLMScorer

OPTIONS = ["mat", "hat", "bat", "rat"]


@pytest.mark.parametrize("text,expected", [
    ("A", 0), (" (B)", 1), ("C.", 2), ("D) rat", 3), ("B\nBecause the passage says so.", 1), ("A - mat", 0),
    ("Answer: C", 2), ("answer:D", 3), ("The answer is (B).", 1), ("The correct answer is C", 2),
    ("**D**", 3), ("Option B", 1), ("I think (C) is right", 2), ("hat", 1), ("Rat.", None), ("rat.", 3),
    ("", None), ("I don't know", None), ("A cat sat on it", None), ("E", None), ("Both could be true", None),
])
def test_extract_letter(text, expected):
    assert extract_letter(text, OPTIONS) == expected


def test_batched_greedy_generation_equals_one_at_a_time(loaded_lm):
    model, tok = loaded_lm
    prompts = ["Ka lo mi ne su?\nAnswer:\n", "Ta\nAnswer:\n", "Vo pe da ri ta lo mi ka ne su vo?\nAnswer:\n"]
    batched = GreedyGenerator(model, tok, device="cpu", batch_size=3, max_new_tokens=5, progress=False)
    single = GreedyGenerator(model, tok, device="cpu", batch_size=1, max_new_tokens=5, progress=False)
    out = batched.generate(prompts)
    assert out == single.generate(prompts)
    assert all(isinstance(t, str) for t in out) and batched.generated_tokens > 0


def test_generate_mode_scores_one_hot_and_counts_unparseable(make_cfg, loaded_lm, load_items, tmp_path):
    model, tok = loaded_lm
    cfg = make_cfg(mode="generate", num_fewshot=0, max_new_tokens=3)
    run = RunDir(tmp_path)
    scorer = LLMScorer(cfg, run, model=model, tokenizer=tok, progress=False)
    items = load_items("belebele", "eng_Latn")
    scores = scorer.score(items, benchmark="belebele", language="eng_Latn")
    assert scores.shape == (9, 4)
    finite = np.isfinite(scores)
    assert set(finite.sum(1)) <= {0, 1}
    meta = scorer.last_meta
    gens = meta["generations"]
    assert list(gens) == items["id"]
    unparseable = [i for i, g in enumerate(gens.values()) if extract_letter(g, items[i]["options"]) is None]
    assert meta["unparseable"] == len(unparseable) == int((finite.sum(1) == 0).sum())
    for i, g in enumerate(gens.values()):
        if i not in unparseable:
            assert scores[i, extract_letter(g, items[i]["options"])] == 0.0
    side = json.loads((tmp_path / "eval" / "belebele" / "llm_meta" / "eng_Latn.json").read_text())
    assert side["unparseable"] == meta["unparseable"] and side["generations"] == gens
    summary = scorer.language_meta("belebele", "eng_Latn")
    assert summary["unparseable"] == meta["unparseable"] and "generations" not in summary
    ctx = scorer.contexts(items, benchmark="belebele", language="eng_Latn")
    assert ctx[0].startswith("Given the following passage, query, and answer choices") and ctx[0].endswith("Answer:\n")
