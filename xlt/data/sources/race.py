"""RACE (``ehovy/race``, config ``all``): English exam reading comprehension, one row per question.

Upstream fields: ``example_id`` (the passage file, e.g. ``high132.txt``), ``article``, ``question``,
``options`` (4 strings), ``answer`` (a letter A-D). Rules: drop cloze questions (``_`` in the question)
and passages of more than ``max_passage_sentences`` sentences; options keep their order.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from xlt.data.sources.base import (
    BuildContext,
    Row,
    Source,
    get_letter,
    get_str,
    get_str_list,
    is_cloze,
    option_problem,
)


class Race(Source):
    name = "race"
    dataset = "RACE"
    default_license = "RACE: non-commercial research and educational use only (CMU RACE terms)"

    def begin_split(self, split: str) -> None:
        self._seen: Counter[str] = Counter()  # questions per passage, to number them

    def convert_row(self, split: str, index: int, row: Row, ctx: BuildContext) -> dict[str, Any] | str:
        example_id = get_str(row, "example_id")
        number = self._seen[example_id]
        self._seen[example_id] += 1
        article = get_str(row, "article")
        question = get_str(row, "question")
        options = get_str_list(row, "options")
        label = get_letter(row, "answer")
        if is_cloze(question):
            return "cloze_question"
        reason = self.passage_problem(split, article, ctx) or option_problem(options)
        if reason:
            return reason
        return self.record(split, row.where, example_id, f"{example_id}#{number}", article, question, options, label)
