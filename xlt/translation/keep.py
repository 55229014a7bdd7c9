"""Rows kept per translated language: zero kept rows is an error, a low keep rate a warning.

A translated row is dropped when its options become identical or (with ``translate.quality.drop_runaway``)
a field shows runaway repetition. A language that keeps no training row would silently vanish from the
translate-train-all union; one that keeps few usually means a wrong language code or a broken model.
"""

from __future__ import annotations

import logging
from typing import Any

from xlt.errors import DataError

log = logging.getLogger(__name__)

# Below this share of kept rows (train and dev together) the report warns. NLLB-600M on RACE-style text
# drops a few percent (equal options, runaway repetition); the echo translator drops none.
LOW_KEEP_RATE = 0.9


def keep_rate(rows: dict[str, dict[str, int]]) -> float | None:
    """Rows out / rows in over all splits (None when there were no rows in)."""
    n_in = sum(r["in"] for r in rows.values())
    return sum(r["out"] for r in rows.values()) / n_in if n_in else None


def keep_warnings(language: str, rows: dict[str, dict[str, int]], threshold: float = LOW_KEEP_RATE) -> list[str]:
    """A warning per low-keep-rate language (zero kept rows are :func:`check_kept`'s error, not a warning)."""
    rate = keep_rate(rows)
    if rate is None or rate == 0 or rate >= threshold:
        return []
    kept = ", ".join(f"{s} {r['out']}/{r['in']}" for s, r in rows.items())
    return [f"{language}: only {rate:.1%} of the rows were kept ({kept}); see the drop counts and examples"]


def check_kept(report: dict[str, Any], path: str) -> None:
    """Raise :class:`DataError` when a language kept no training row (after the report is written)."""
    empty = [lang for lang, info in report["languages"].items() if info["rows"].get("train", {}).get("out", 0) == 0
             and info["rows"].get("train", {}).get("in", 0) > 0]
    if empty:
        raise DataError(
            f"translation kept 0 training rows for {', '.join(empty)} (every row was dropped; see {path}): "
            "check the language code and the translation model, or drop the language from translate.languages"
        )
