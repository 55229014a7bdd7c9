"""Harness prompts, few-shot selection and the zero-shot instruction prompt."""

from __future__ import annotations

import random

import pytest

from xlt.errors import ConfigError, DataError
from xlt.scoring.llm import prompts

REC = {"id": "x#1", "passage": "The cat sat.", "question": "  Where did it sit? \n",
       "options": ["mat", "hat", "bat", "rat"], "label": 2}


def test_belebele_and_global_mmlu_prompts_are_the_harness_templates():
    assert prompts.belebele_prompt(REC) == (
        "P: The cat sat.\nQ: Where did it sit?\nA: mat\nB: hat\nC: bat\nD: rat\nAnswer:")
    assert prompts.global_mmlu_prompt(REC) == "Where did it sit?\nA. mat\nB. hat\nC. bat\nD. rat\nAnswer:"
    with pytest.raises(ConfigError, match="no LLM prompt"):
        prompts.doc_to_text("xnli", REC)


def test_belebele_fewshot_is_first_n_of_the_split_skipping_the_question(load_items):
    items = load_items("belebele", "eng_Latn")
    shots = prompts.fewshot_indices("belebele", items, items, 5)
    assert shots[0] == [1, 2, 3, 4, 5]
    assert shots[3] == [0, 1, 2, 4, 5]
    assert shots[8] == [0, 1, 2, 3, 4]
    with pytest.raises(DataError, match="only 9 rows"):
        prompts.fewshot_indices("belebele", items, items, 9)


def test_fewshot_context_joins_examples_with_gold_letters(load_items):
    items = load_items("belebele", "eng_Latn")
    ctx = prompts.fewshot_contexts("belebele", items, items, prompts.fewshot_indices("belebele", items, items, 2))
    blocks = ctx[0].split("\n\n")
    assert len(blocks) == 3
    assert blocks[0] == prompts.belebele_prompt(items[1]) + " " + "ABCD"[items[1]["label"]]
    assert blocks[1] == prompts.belebele_prompt(items[2]) + " " + "ABCD"[items[2]["label"]]
    assert blocks[2] == prompts.belebele_prompt(items[0])
    assert ctx[0].endswith("\nAnswer:")


def test_global_mmlu_full_takes_first_dev_rows_of_the_subject(load_items):
    items, dev = load_items("global_mmlu", "en"), load_items("global_mmlu", "en", "dev")
    shots = prompts.fewshot_indices("global_mmlu", items, dev, 5, sampler="first_n")
    for row, idx in zip(items, shots, strict=True):
        expected = [i for i, s in enumerate(dev["subject"]) if s == row["subject"]][:5]
        assert idx == expected


def test_global_mmlu_lite_draws_seeded_random_rows_of_the_category_in_order(load_items):
    items, dev = load_items("global_mmlu", "en"), load_items("global_mmlu", "en", "dev")
    shots = prompts.fewshot_indices("global_mmlu", items, dev, 5, sampler="random", seed=1234)
    assert shots == prompts.fewshot_indices("global_mmlu", items, dev, 5, sampler="random", seed=1234)
    # The harness keeps one Random(seed) per category task and draws question after question.
    pools = {}
    for i, c in enumerate(dev["subject_category"]):
        pools.setdefault(c, []).append(i)
    rngs = {c: random.Random(1234) for c in pools}
    for row, idx in zip(items, shots, strict=True):
        assert idx == rngs[row["subject_category"]].sample(pools[row["subject_category"]], 5)
        assert {dev[i]["subject_category"] for i in idx} == {row["subject_category"]}
    stem = [s for s, c in zip(shots, items["subject_category"], strict=True) if c == "STEM"]
    assert len({tuple(s) for s in stem}) > 1, "draws must advance from question to question"
    assert shots != prompts.fewshot_indices("global_mmlu", items, dev, 5, sampler="random", seed=7)


def test_global_mmlu_with_too_few_dev_rows_names_the_subject(load_items):
    items, dev = load_items("global_mmlu", "en"), load_items("global_mmlu", "en", "dev")
    with pytest.raises(DataError, match="subject 'abstract_algebra' has 5 few-shot rows in the dev split, 6 needed"):
        prompts.fewshot_indices("global_mmlu", items, dev, 6)
    with pytest.raises(ConfigError, match="unknown few-shot sampler"):
        prompts.fewshot_indices("global_mmlu", items, dev, 5, sampler="balanced")


def test_instruction_prompt_is_the_belebele_paper_format():
    assert prompts.instruction_prompt(REC, "Pick.") == (
        "Pick.\n###\nPassage:\nThe cat sat.\n###\nQuery:\nWhere did it sit?\n###\nChoices:\n"
        "(A) mat\n(B) hat\n(C) bat\n(D) rat\n###\nAnswer:\n")
    no_passage = prompts.instruction_prompt({**REC, "passage": ""}, "Pick.")
    assert "Passage" not in no_passage and no_passage.startswith("Pick.\n###\nQuery:\n")
