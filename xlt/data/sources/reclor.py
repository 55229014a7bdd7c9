"""ReClor (``tasksource/reclor`` or the original ``train.json``/``val.json``): logical reasoning.

Upstream fields: ``context``, ``question``, ``answers`` (4 strings), ``label`` (int 0-3 in the original
JSON; a string on the Hub), ``id_string``. Rules: no sentence filter; options keep their order.
ReClor is for non-commercial research only and distributed behind an agreement.
"""

from __future__ import annotations

from typing import Any

from xlt.data.sources.base import BuildContext, Row, Source, get, get_str, get_str_list, option_problem
from xlt.errors import DataError


class ReClor(Source):
    name = "reclor"
    dataset = "ReClor"
    default_license = "ReClor: non-commercial research only, obtained under the ReClor data agreement"

    def convert_row(self, split: str, index: int, row: Row, ctx: BuildContext) -> dict[str, Any] | str:
        context = get_str(row, "context")
        question = get_str(row, "question")
        answers = get_str_list(row, "answers")
        id_string = get_str(row, "id_string")
        raw = get(row, "label", (int, str), "an int 0-3 (or its string)")
        label = int(raw) if isinstance(raw, int) or raw.strip().isdigit() else -1
        if not 0 <= label <= 3:
            raise DataError(f"{row.where}: field 'label' must be 0-3, got {raw!r}")
        reason = option_problem(answers)
        if reason:
            return reason
        return self.record(split, row.where, id_string, id_string, context, question, answers, label)
