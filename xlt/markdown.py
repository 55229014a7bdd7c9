"""The one Markdown table writer of xlt (build, translation, run and comparison reports, findings, model card)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any


def cell(value: Any, digits: int | None = None) -> str:
    """``value`` as the text of a table cell: None and NaN empty, floats with ``digits`` decimals when
    given, ``|`` escaped and line breaks as spaces (so a cell never breaks its row)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    text = f"{value:.{digits}f}" if digits is not None and isinstance(value, float) else str(value)
    return text.replace("|", "\\|").replace("\r\n", " ").replace("\n", " ")


def markdown_table(header: Sequence[Any], rows: Iterable[Sequence[Any]], digits: int | None = None,
                   align: str = "") -> str:
    """A GitHub-flavoured Markdown table, ending in a newline. ``align`` holds one character per column:
    ``l`` left, ``r`` right (counts); any other character, or none, the default alignment."""
    rule = [{"r": "---:", "l": ":---"}.get(align[i:i + 1], "---") for i in range(len(header))]
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "|".join(rule) + "|"]
    lines += ["| " + " | ".join(cell(v, digits) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
