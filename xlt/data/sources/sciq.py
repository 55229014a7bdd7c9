"""SciQ (``allenai/sciq``): science exam questions with a supporting paragraph.

Upstream fields: ``question``, ``distractor1..3``, ``correct_answer``, ``support`` (the passage).
Rules: drop cloze questions (``_``), rows with an empty ``support`` and passages of more than
``max_passage_sentences`` sentences; shuffle the four options with a generator seeded from
(seed, source, split, row number).
"""

from __future__ import annotations

from typing import Any

from xlt.data.sources.base import (
    BuildContext,
    Row,
    Source,
    get_str,
    is_cloze,
    option_problem,
    text_id,
)


class SciQ(Source):
    name = "sciq"
    dataset = "sciQ"
    default_license = "CC BY-NC 3.0 (SciQ, Allen Institute for AI)"

    def convert_row(self, split: str, index: int, row: Row, ctx: BuildContext) -> dict[str, Any] | str:
        # SciQ rows have no id: they are numbered within the split.
        question = get_str(row, "question")
        correct = get_str(row, "correct_answer")
        distractors = [get_str(row, f"distractor{k}") for k in (1, 2, 3)]
        support = get_str(row, "support")
        if is_cloze(question):
            return "cloze_question"
        if not support.strip():
            return "empty_support"
        reason = self.passage_problem(split, support, ctx)
        if reason:
            return reason
        options = [*distractors, correct]
        reason = option_problem(options)
        if reason:
            return reason
        ctx.rng(self.name, split, index).shuffle(options)
        label = options.index(correct)
        return self.record(split, row.where, text_id(support), f"{split}-{index}", support, question, options, label, correct)
