"""A benchmark as an lm-evaluation-harness task: its declared prompt (:class:`~xlt.data.benchmarks.declarations.Prompt`)
formatted item by item, and its few-shot examples drawn.

:class:`HarnessTask` reads the definition's ``prompt`` (template, answer continuations, instruction,
sampler and grouping) and its ``fewshot_split``; :mod:`xlt.scoring.llm.prompts` assembles the k-shot
contexts from what it returns.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from datasets import Dataset

from xlt.data.schema import LETTERS
from xlt.errors import ConfigError, DataError

# The Belebele paper's zero-shot instruction for instruction-tuned models (generation mode), with and
# without a passage: the instruction of a prompt that declares none.
INSTRUCTION = ("Given the following passage, query, and answer choices, output the letter corresponding to the "
               "correct answer.")
INSTRUCTION_NO_PASSAGE = "Given the following query and answer choices, output the letter corresponding to the correct answer."


class HarnessTask:
    """The harness's view of one benchmark definition ``bench``: ``doc_to_text``, ``doc_to_choice`` and
    ``doc_to_target`` of an item, the zero-shot instruction, and the few-shot rows of each item."""

    def __init__(self, bench: Any):
        self.bench = bench
        self.prompt = bench.prompt
        self.kind = bench.kind
        self.pivot_language = bench.pivot_language
        self.fewshot_split = bench.fewshot_split
        self.harness_task_unit = self.prompt.harness_task_unit

    def doc_to_text(self, rec: Mapping[str, Any]) -> str:
        """The item's prompt: the declared template over its passage, question and option lines."""
        p = self.prompt
        fields = {name: (rec.get(name) or "") if name in p.raw else (rec.get(name) or "").strip()
                  for name in ("passage", "question")}
        options = "\n".join(p.option.format(letter=LETTERS[i], option=o) for i, o in enumerate(rec["options"]))
        lines = [line for line in p.text.split("\n") if line != "{passage}" or fields["passage"]]
        return "\n".join(lines).format(options=options, **fields)

    def doc_to_choice(self, rec: Mapping[str, Any]) -> list[str]:
        """The answer continuations: the option letters, or the option texts with a lower-cased first letter."""
        if self.prompt.choices == "lowercased_options":
            return [o[0].lower() + o[1:] for o in rec["options"]]
        return list(LETTERS[: len(rec["options"])])

    def doc_to_target(self, rec: Mapping[str, Any]) -> str:
        return self.doc_to_choice(rec)[int(rec["label"])]

    def instruction(self) -> str:
        """The zero-shot instruction (:func:`xlt.scoring.llm.prompts.instruction_prompt`)."""
        return self.prompt.instruction or (INSTRUCTION if self.bench.has_passage else INSTRUCTION_NO_PASSAGE)

    def default_fewshot_sampler(self, bcfg: Any = None) -> str:
        """The sampler of ``eval.llm.fewshot_sampler=auto`` (the harness task's own; the same for every entry ``bcfg``)."""
        return self.prompt.sampler

    def fewshot_group(self, sampler: str) -> str | None:
        return self.prompt.fewshot_groups.get(sampler)

    def fewshot_indices(self, items: Dataset, pool: Dataset, k: int, *, sampler: str = "first_n",
                        seed: int = 1234, same_split: bool | None = None) -> list[list[int]]:
        """For each row of ``items``, the indices into ``pool`` of its ``k`` few-shot examples.

        When the pool is the evaluated split itself (``same_split``; default: ``fewshot_split`` is None)
        the harness draws ``k + 1`` and drops the question itself (matched by ``id``).
        """
        if k <= 0:
            return [[] for _ in range(len(items))]
        if sampler not in self.prompt.samplers:
            raise ConfigError(f"{self.kind}: unknown few-shot sampler '{sampler}'; choose one of "
                              f"{list(self.prompt.samplers)}")
        same = self.fewshot_split is None if same_split is None else same_split
        key = self.fewshot_group(sampler)
        for name, ds in (("items", items), ("few-shot pool", pool)):
            if key is not None and key not in ds.column_names:
                raise DataError(f"{self.kind} {name}: column '{key}' is missing (needed to pick few-shot examples)")
        groups: dict[Any, list[int]] = {}
        for i, g in enumerate(pool[key] if key is not None else [None] * len(pool)):
            groups.setdefault(g, []).append(i)
        pool_ids = list(pool["id"])  # a list: indexing a datasets Column reads Arrow per item
        rngs: dict[Any, random.Random] = {}
        draw = k + 1 if same else k
        out = []
        for row, (qid, g) in enumerate(zip(items["id"], items[key] if key is not None else [None] * len(items),
                                          strict=True)):
            group = groups.get(g, [])
            if len(group) < draw:
                unit = f"{key} '{g}'" if key is not None else "the pool"
                raise DataError(f"{self.kind} row {row} (id {qid}): {unit} has {len(group)} few-shot rows in the "
                                f"{self.fewshot_split or 'evaluated'} split, {draw} needed")
            if sampler == "first_n":
                picked = group[:draw]
            else:
                picked = rngs.setdefault(g, random.Random(seed)).sample(group, draw)
            out.append([i for i in picked if not (same and pool_ids[i] == qid)][:k])
        return out
