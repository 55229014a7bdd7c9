"""Cut passages into sentences for MT and join the translated sentences back.

NLLB drops or truncates later sentences of multi-sentence inputs, so passages are translated one
sentence at a time. Joining keeps the original layout: the whitespace between two source sentences
decides the separator (a line break stays a line break; anything else becomes one space, or nothing for
scripts written without spaces).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlt.data.sentences import split_sentences

# Scripts written without spaces between sentences (FLORES script suffix).
NO_SPACE_SCRIPTS = frozenset({"Hans", "Hant", "Jpan", "Thai", "Laoo", "Khmr", "Mymr", "Tibt"})


# Sentence ends of scripts the (English-oriented) splitter does not know: CJK full stops, the Devanagari
# danda, the Arabic question mark, the Ethiopic full stop, the Myanmar section mark.
_NON_LATIN_END = re.compile(r"(?<=[\u3002\uff01\uff1f\u0964\u061f\u1362\u104b])\s*")


def _split_sentences(text: str) -> list[str]:
    """xlt's offline splitter, plus breaks after non-Latin sentence-final marks (for translate-test)."""
    out: list[str] = []
    for piece in split_sentences(text):
        out.extend(p for p in _NON_LATIN_END.split(piece) if p.strip())
    return out


@dataclass(frozen=True)
class Segmented:
    """A passage as sentences plus the separators found between them (``len(seps) == len(sents) - 1``)."""

    sentences: tuple[str, ...]
    separators: tuple[str, ...]


def segment_passage(text: str) -> Segmented:
    """Split ``text`` into stripped sentences, remembering the whitespace between consecutive ones."""
    if not text.strip():
        return Segmented((), ())
    sentences = [s.strip() for s in _split_sentences(text) if s.strip()]
    seps: list[str] = []
    pos = 0
    for i, sent in enumerate(sentences):
        at = text.find(sent, pos)
        if i:
            # The splitter may normalise a sentence; then the gap is unknown and becomes a space.
            seps.append(text[pos:at] if at >= 0 else " ")
        if at >= 0:
            pos = at + len(sent)
    return Segmented(tuple(sentences), tuple(seps))


def join_sentences(sentences: list[str], separators: tuple[str, ...], language: str) -> str:
    """Join translated ``sentences`` with separators derived from the source's (see module docstring)."""
    script = language.rpartition("_")[2]
    plain = "" if script in NO_SPACE_SCRIPTS else " "
    out: list[str] = []
    for i, sent in enumerate(sentences):
        if i:
            sep = separators[i - 1]
            out.append("\n" * sep.count("\n") if "\n" in sep else plain)
        out.append(sent.strip())
    return "".join(out)
