"""Harness prompts, few-shot selection and the zero-shot instruction prompt."""

from __future__ import annotations

import random

import pytest

from xlt.data.benchmarks import get_benchmark
from xlt.errors import ConfigError, DataError
from xlt.scoring.llm import prompts
from xlt.scoring.llm.task import HarnessTask

BELEBELE, GMMLU, LITE = (HarnessTask(get_benchmark(k)) for k in ("belebele", "global_mmlu", "global_mmlu_lite"))

REC = {"id": "x#1", "passage": "The cat sat.", "question": "  Where did it sit? \n",
       "options": ["mat", "hat", "bat", "rat"], "label": 2}


def test_belebele_and_global_mmlu_prompts_are_the_harness_templates():
    assert BELEBELE.doc_to_text(REC) == (
        "P: The cat sat.\nQ: Where did it sit?\nA: mat\nB: hat\nC: bat\nD: rat\nAnswer:")
    no_passage = {**REC, "passage": ""}
    assert GMMLU.doc_to_text(no_passage) == "Where did it sit?\nA. mat\nB. hat\nC. bat\nD. rat\nAnswer:"
    assert LITE.doc_to_text(no_passage) == GMMLU.doc_to_text(no_passage)
    assert BELEBELE.doc_to_choice(REC) == ["A", "B", "C", "D"] and BELEBELE.doc_to_target(REC) == "C"
    # Any number of options: the letters follow the item.
    three = {**no_passage, "options": ["mat", "hat", "bat"], "label": 1}
    assert GMMLU.doc_to_text(three).endswith("\nC. bat\nAnswer:") and GMMLU.doc_to_choice(three) == ["A", "B", "C"]


def test_belebele_fewshot_is_first_n_of_the_split_skipping_the_question(load_items):
    items = load_items("belebele", "eng_Latn")
    shots = BELEBELE.fewshot_indices(items, items, 5)
    assert shots[0] == [1, 2, 3, 4, 5]
    assert shots[3] == [0, 1, 2, 4, 5]
    assert shots[8] == [0, 1, 2, 3, 4]
    with pytest.raises(DataError, match="has 9 few-shot rows in the evaluated split, 10 needed"):
        BELEBELE.fewshot_indices(items, items, 9)


def test_fewshot_context_joins_examples_with_gold_letters(load_items):
    items = load_items("belebele", "eng_Latn")
    ctx = prompts.fewshot_contexts(BELEBELE, items, items, BELEBELE.fewshot_indices(items, items, 2))
    blocks = ctx[0].split("\n\n")
    assert len(blocks) == 3
    assert blocks[0] == BELEBELE.doc_to_text(items[1]) + " " + "ABCD"[items[1]["label"]]
    assert blocks[1] == BELEBELE.doc_to_text(items[2]) + " " + "ABCD"[items[2]["label"]]
    assert blocks[2] == BELEBELE.doc_to_text(items[0])
    assert ctx[0].endswith("\nAnswer:")


def test_global_mmlu_full_takes_first_dev_rows_of_the_subject(load_items):
    items, dev = load_items("global_mmlu", "en"), load_items("global_mmlu", "en", "dev")
    assert GMMLU.default_fewshot_sampler(None) == "first_n" and LITE.default_fewshot_sampler(None) == "random"
    shots = GMMLU.fewshot_indices(items, dev, 5, sampler="first_n")
    for row, idx in zip(items, shots, strict=True):
        expected = [i for i, s in enumerate(dev["subject"]) if s == row["subject"]][:5]
        assert idx == expected


def test_global_mmlu_lite_draws_seeded_random_rows_of_the_category_in_order(load_items):
    items, dev = load_items("global_mmlu", "en"), load_items("global_mmlu", "en", "dev")
    shots = GMMLU.fewshot_indices(items, dev, 5, sampler="random", seed=1234)
    assert shots == GMMLU.fewshot_indices(items, dev, 5, sampler="random", seed=1234)
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
    assert shots != GMMLU.fewshot_indices(items, dev, 5, sampler="random", seed=7)


def test_global_mmlu_with_too_few_dev_rows_names_the_subject(load_items):
    items, dev = load_items("global_mmlu", "en"), load_items("global_mmlu", "en", "dev")
    with pytest.raises(DataError, match="subject 'abstract_algebra' has 5 few-shot rows in the dev split, 6 needed"):
        GMMLU.fewshot_indices(items, dev, 6)
    with pytest.raises(ConfigError, match="unknown few-shot sampler"):
        GMMLU.fewshot_indices(items, dev, 5, sampler="balanced")


def test_instruction_prompt_is_the_belebele_paper_format():
    assert prompts.instruction_prompt(REC, "Pick.") == (
        "Pick.\n###\nPassage:\nThe cat sat.\n###\nQuery:\nWhere did it sit?\n###\nChoices:\n"
        "(A) mat\n(B) hat\n(C) bat\n(D) rat\n###\nAnswer:\n")
    no_passage = prompts.instruction_prompt({**REC, "passage": ""}, "Pick.")
    assert "Passage" not in no_passage and no_passage.startswith("Pick.\n###\nQuery:\n")
    two = prompts.instruction_prompt({**REC, "options": ["yes", "no"]}, "Pick.")
    assert "Choices:\n(A) yes\n(B) no\n###" in two
    assert BELEBELE.instruction().startswith("Given the following passage,") and "passage" not in GMMLU.instruction()
