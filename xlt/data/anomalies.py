"""The anomaly policy: what every source loader and benchmark loader does with bad or odd input.

Two classes, applied the same way everywhere (training sources in :mod:`xlt.data.sources`, benchmarks in
:mod:`xlt.data.benchmarks`):

=====================================  ==========================================================
the **file is wrong**                  stop with :class:`~xlt.errors.DataError` (``xlt: error:``)
                                       naming the file, the 1-based line (JSONL/JSON) or row
                                       (Parquet, also 1-based) and the field, and saying how to fix
                                       it
  missing or renamed column/field      ``missing field 'x'``
  wrong type (not a string, a list)    ``field 'x' must be ...``
  undecodable bytes (not UTF-8)        the line holding them
  empty file, truncated last line      ``no rows`` / ``invalid or truncated JSON``
  an enabled source with 0 rows        error (a benchmark language with 0 scorable items too)
a **row is odd**                       never abort, never keep silently: repair by the rule below
                                       or drop; every repair and drop is counted by reason (build
                                       report per source and split; ``data_checks`` in each
                                       evaluation result)
  stray BOM, CRLF / CR line ends       repaired: BOM removed, line ends made ``\\n``
                                       (``repaired: bom`` / ``crlf``)
  null value in a text field           training: dropped (``null_field``)
  empty or whitespace-only passage,    training: dropped (``empty_passage`` / ``empty_question`` /
  question or option                   ``empty_option``); MultiRC: an empty option is left out of
                                       the question's options (``empty_option_skipped``), and a
                                       question with more than four draws its four from the rest
  duplicate options                    training: dropped (``duplicate_options``)
  placeholder option text              ``nan``/``NaN``/``null``/``NULL``/``undefined`` (conversion
                                       artefacts): dropped (``placeholder_option``); ``None`` is a
                                       real answer ("How many...? None"): kept, counted in
                                       ``notes.option_text_None``
  absurdly long field                  dropped (``field_too_long``) above :data:`MAX_PASSAGE_CHARS`
                                       / :data:`MAX_SHORT_CHARS`; features also cut every text by
                                       characters before tokenization
=====================================  ==========================================================

Benchmarks are never silently changed: odd items are kept and counted (``data_checks``: duplicate ids,
duplicate options, empty options, empty passages, empty questions; a ``null`` text reads as empty); a
``null`` id or gold answer is an error naming the row; only items that cannot be scored
at all (fewer than two distinct non-empty options) are left out and counted (``unscorable``); a language
file with no scorable item is an error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

# A passage that fits the 25-sentence filter is a few thousand characters; the longest evaluation passages are ~3k.
MAX_PASSAGE_CHARS = 100_000
# Questions and options.
MAX_SHORT_CHARS = 10_000
# Option texts that are artefacts of a NaN/null conversion, never a real answer.
PLACEHOLDERS = frozenset({"nan", "NaN", "NAN", "null", "NULL", "undefined"})
BOM = "\ufeff"


def clean_text(text: str, repairs: Counter) -> str:
    """``text`` with a stray BOM removed and CRLF/CR line ends made LF (each repair counted)."""
    if BOM in text:
        text = text.replace(BOM, "")
        repairs["bom"] += 1
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        repairs["crlf"] += 1
    return text


def row_problem(passage: str | None, question: str, options: Sequence[str], *, needs_passage: bool = True) -> str | None:
    """The drop reason of an odd training row (see the module table), or None if it is fine."""
    if max((len(o) for o in options), default=0) > MAX_SHORT_CHARS or len(question) > MAX_SHORT_CHARS:
        return "field_too_long"
    if passage is not None and len(passage) > MAX_PASSAGE_CHARS:
        return "field_too_long"
    if needs_passage and passage is not None and not passage.strip():
        return "empty_passage"
    if not question.strip():
        return "empty_question"
    return option_problem(options)


def option_problem(options: Sequence[str]) -> str | None:
    """A drop reason if the options cannot form a valid item (empty, placeholder, duplicate), else None."""
    if any(not o.strip() for o in options):
        return "empty_option"
    if any(o.strip() in PLACEHOLDERS for o in options):
        return "placeholder_option"
    if len(set(options)) != len(options):
        return "duplicate_options"
    return None
