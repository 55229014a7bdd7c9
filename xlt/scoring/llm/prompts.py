"""Prompts for causal LLMs, character for character those of lm-evaluation-harness 0.4.x.

Belebele (``lm_eval/tasks/belebele/_default_template_yaml``)::

    P: {flores_passage}\\nQ: {question.strip()}\\nA: {mc_answer1}\\nB: ...\\nD: {mc_answer4}\\nAnswer:

Global-MMLU (``lm_eval/tasks/global_mmlu/*/_*_template_yaml``)::

    {question.strip()}\\nA. {option_a}\\nB. {option_b}\\nC. {option_c}\\nD. {option_d}\\nAnswer:

A k-shot context is the k examples, each followed by ``" " + gold letter`` and ``"\\n\\n"``, then the
question's own prompt; each option is scored as the continuation ``" " + letter``.

Few-shot selection, as the harness's samplers do it:

* Belebele (``first_n`` on the test split): the first k rows of the same language's test split,
  skipping the evaluated question itself.
* Global-MMLU Full (``first_n`` on ``dev``, one task per subject): the first k dev rows of the subject.
* Global-MMLU Lite (``default`` sampler on ``dev``, one task per category, seed 1234):
  ``Random(seed).sample(category's dev rows, k)`` drawn question after question, in test order,
  with one generator per category.

With a chat template (``eval.llm.chat_template``) the examples are separate user/assistant turns,
the harness's default ``fewshot_as_multiturn=True`` (:func:`chat_messages`).

The zero-shot instruction prompt for generation is the Belebele paper's (see :func:`instruction_prompt`).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from datasets import Dataset

from xlt.data.schema import LETTERS
from xlt.errors import ConfigError, DataError

FEWSHOT_DELIMITER = "\n\n"
TARGET_DELIMITER = " "
PASSAGE_KINDS = ("belebele",)
SAMPLERS = ("first_n", "random")


def belebele_prompt(rec: Mapping[str, Any]) -> str:
    """The harness's Belebele ``doc_to_text`` on an EVAL-schema record."""
    a, b, c, d = rec["options"]
    return f"P: {rec['passage']}\nQ: {rec['question'].strip()}\nA: {a}\nB: {b}\nC: {c}\nD: {d}\nAnswer:"


def global_mmlu_prompt(rec: Mapping[str, Any]) -> str:
    """The harness's Global-MMLU ``doc_to_text`` on an EVAL-schema record."""
    a, b, c, d = rec["options"]
    return f"{rec['question'].strip()}\nA. {a}\nB. {b}\nC. {c}\nD. {d}\nAnswer:"


PROMPTS = {"belebele": belebele_prompt, "global_mmlu": global_mmlu_prompt}


def doc_to_text(kind: str, rec: Mapping[str, Any]) -> str:
    try:
        return PROMPTS[kind](rec)
    except KeyError:
        raise ConfigError(f"no LLM prompt for benchmark kind '{kind}'; known: {sorted(PROMPTS)}") from None


def fewshot_indices(
    kind: str,
    items: Dataset,
    pool: Dataset,
    k: int,
    *,
    sampler: str = "first_n",
    seed: int = 1234,
) -> list[list[int]]:
    """For each row of ``items``, the indices into ``pool`` of its ``k`` few-shot examples.

    ``pool`` is the split examples come from: for Belebele the language's test split (the question
    itself is skipped, matched by ``id``); for Global-MMLU its ``dev`` split (grouped by ``subject``
    for ``first_n``, by ``subject_category`` for ``random``).
    """
    if k <= 0:
        return [[] for _ in range(len(items))]
    if sampler not in SAMPLERS:
        raise ConfigError(f"unknown few-shot sampler '{sampler}'; choose one of {list(SAMPLERS)}")
    if kind == "belebele":
        return _first_n_skipping_self(items["id"], pool["id"], k)
    if kind == "global_mmlu":
        key = "subject" if sampler == "first_n" else "subject_category"
        for name, ds in (("items", items), ("few-shot pool", pool)):
            if key not in ds.column_names:
                raise DataError(f"Global-MMLU {name}: column '{key}' is missing (needed to pick few-shot examples)")
        groups: dict[str, list[int]] = defaultdict(list)
        for i, g in enumerate(pool[key]):
            groups[g].append(i)
        rngs: dict[str, random.Random] = {}
        out = []
        for row, g in enumerate(items[key]):
            group = groups.get(g, [])
            if len(group) < k:
                raise DataError(
                    f"Global-MMLU row {row} (id {items[row]['id']}): {key} '{g}' has {len(group)} few-shot "
                    f"rows in the dev split, {k} needed"
                )
            if sampler == "first_n":
                out.append(group[:k])
            else:
                rng = rngs.setdefault(g, random.Random(seed))
                out.append(rng.sample(group, k))
        return out
    raise ConfigError(f"no few-shot rule for benchmark kind '{kind}'; known: belebele, global_mmlu")


def _first_n_skipping_self(item_ids: Sequence[str], pool_ids: Sequence[str], k: int) -> list[list[int]]:
    if len(pool_ids) - 1 < k:
        raise DataError(f"Belebele few-shot: {k} examples requested but the split has only {len(pool_ids)} rows")
    head = list(range(k + 1))
    out = []
    for qid in item_ids:
        out.append([i for i in head if pool_ids[i] != qid][:k])
    return out


# One question's k-shot prompt: [(example prompt, gold letter)] and the question's own prompt.
Turns = tuple[list[tuple[str, str]], str]


def fewshot_turns(kind: str, items: Dataset, pool: Dataset | None, shots: list[list[int]]) -> list[Turns]:
    """The examples (prompt, gold letter) and the question prompt of every row of ``items``."""
    pool_turns: dict[int, tuple[str, str]] = {}
    out = []
    for row, rec in enumerate(items):
        examples = []
        for i in shots[row]:
            if i not in pool_turns:
                ex = pool[i]
                pool_turns[i] = (doc_to_text(kind, ex), LETTERS[ex["label"]])
            examples.append(pool_turns[i])
        out.append((examples, doc_to_text(kind, rec)))
    return out


def plain_context(turns: Turns) -> str:
    """The harness's plain-text k-shot context (without the answer)."""
    examples, question = turns
    return "".join(q + TARGET_DELIMITER + a + FEWSHOT_DELIMITER for q, a in examples) + question


def chat_messages(turns: Turns, system: str | None, *, multiturn: bool = True) -> list[dict[str, str]]:
    """The harness's chat messages (``fewshot_context`` with ``apply_chat_template``): each example a
    user turn and an assistant turn holding the gold letter (``fewshot_as_multiturn``), or everything
    in one user message; ``system`` as a system message."""
    head = [{"role": "system", "content": system}] if system else []
    if not multiturn:
        return head + [{"role": "user", "content": plain_context(turns)}]
    examples, question = turns
    body = [m for q, a in examples for m in ({"role": "user", "content": q}, {"role": "assistant", "content": a})]
    return head + body + [{"role": "user", "content": question}]


def fewshot_contexts(kind: str, items: Dataset, pool: Dataset | None, shots: list[list[int]]) -> list[str]:
    """The harness's plain-text k-shot context of every row of ``items`` (without the answer)."""
    return [plain_context(t) for t in fewshot_turns(kind, items, pool, shots)]


def instruction_prompt(rec: Mapping[str, Any], instruction: str) -> str:
    """The Belebele paper's zero-shot prompt; rows without a passage (Global-MMLU) drop that block."""
    a, b, c, d = rec["options"]
    passage = rec.get("passage") or ""
    head = f"{instruction}\n###\n"
    if passage.strip():
        head += f"Passage:\n{passage}\n###\n"
    return f"{head}Query:\n{rec['question'].strip()}\n###\nChoices:\n(A) {a}\n(B) {b}\n(C) {c}\n(D) {d}\n###\nAnswer:\n"
