"""Quality checks of machine-translated rows, and the rules that handle what they find.

Per segment (a passage sentence, a question, an option):

* **empty output** for a non-empty source: the source text is used instead (``empty_fallback``);
  the row stays. An empty option would make the row invalid, and a missing sentence would silently
  change the passage.
* **output equal to the source** (``unchanged``): counted only. Names, numbers and loanwords are often
  legitimately unchanged; a high rate flags a wrong language code or an untranslatable language.
* **runaway repetition** (``runaway``): a substring (2-40 characters, not only punctuation/space)
  repeated ``runaway_min_repeats`` times in a row, or an output longer than
  ``runaway_max_length_ratio`` x the source + 20 characters. With ``quality.drop_runaway`` (default)
  the whole row is dropped from that language's set (``dropped_runaway``); otherwise only counted.

Per row:

* **options identical after translation** (``dropped_duplicate_options``): the row is dropped from
  that language's set, since a question with two equal options has no single answer.

Every count, and a few example ids per problem, go into ``translation_report.{json,md}``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

_REPEAT = re.compile(r"(.{2,40}?)\1+", re.DOTALL)
_ONLY_PUNCT = re.compile(r"^[\W_]+$")

MAX_EXAMPLES = 5


def has_runaway(source: str, output: str, min_repeats: int = 4, max_ratio: float = 4.0) -> bool:
    """True if ``output`` repeats a substring ``min_repeats`` times in a row, or is far longer than ``source``."""
    if len(output) > max_ratio * len(source) + 20:
        return True
    for m in _REPEAT.finditer(output):
        unit = m.group(1)
        if _ONLY_PUNCT.match(unit):
            continue
        if len(m.group(0)) // len(unit) >= min_repeats and not _repeats_in_source(source, unit, min_repeats):
            return True
    return False


def _repeats_in_source(source: str, unit: str, min_repeats: int) -> bool:
    return unit * min_repeats in source


@dataclass
class QualityStats:
    """Counts of one language's translation (summed over units by :meth:`merge`)."""

    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, what: str, example: str | None = None, n: int = 1) -> None:
        self.counts[what] += n
        if example is not None:
            ex = self.examples.setdefault(what, [])
            if len(ex) < MAX_EXAMPLES:
                ex.append(example)

    def merge(self, other: QualityStats) -> None:
        self.counts.update(other.counts)
        for what, ex in other.examples.items():
            mine = self.examples.setdefault(what, [])
            mine.extend(ex[: MAX_EXAMPLES - len(mine)])

    def to_json(self) -> dict:
        return {"counts": dict(sorted(self.counts.items())), "examples": self.examples}

    @classmethod
    def from_json(cls, obj: dict) -> QualityStats:
        return cls(Counter(obj.get("counts", {})), {k: list(v) for k, v in obj.get("examples", {}).items()})


def check_segment(source: str, output: str, stats: QualityStats, where: str, min_repeats: int, max_ratio: float) -> tuple[str, bool]:
    """Apply the segment rules; return ``(text to use, runaway?)`` and count what was found."""
    if not source.strip():
        return output, False
    if not output.strip():
        stats.add("empty_fallback", where)
        return source, False
    if output.strip() == source.strip():
        stats.add("unchanged", where)
    if has_runaway(source, output, min_repeats, max_ratio):
        stats.add("runaway", where)
        return output, True
    return output, False
