"""An offline English sentence splitter (no model data to download).

The Belebele paper counts passage sentences with NLTK's punkt model, whose data is not shipped in any
pip package. This regex splitter follows punkt's behaviour on ordinary prose closely enough for the
"at most 25 sentences" filter: a sentence ends at ``.``, ``!``, ``?`` or ``…`` (possibly repeated and
followed by closing quotes or brackets) when whitespace and an upper-case letter, a digit or an opening
quote/bracket follow. It does not split after common abbreviations (``Mr.``, ``Dr.``, ``e.g.``), single
initials (``J. K. Rowling``), or inside numbers (``3.14``).
"""

from __future__ import annotations

import re

# Abbreviations (lower-cased, without the final period) after which a period does not end a sentence.
ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e cf al approx dept est fig gen gov inc ltd co corp
    jan feb mar apr jun jul aug sep sept oct nov dec vol vols pp ed eds rev lt col sgt capt
    u.s u.k u.n a.m p.m d.c b.c a.d ph.d
    """.split()
)

# Candidate boundary: terminal punctuation, optional closing quotes/brackets, whitespace, then the
# start of the next sentence (upper-case letter, digit, or an opening quote/bracket).
_BOUNDARY = re.compile(r"""([.!?\u2026]+)(['"\u2019\u201d)\]]*)(\s+)(?=[\"'\u2018\u201c(\[]?[A-Z0-9])""")
_WORD_BEFORE = re.compile(r"(\S+)$")


def _is_abbreviation(text_before: str) -> bool:
    """True if the token that ends ``text_before`` (just before a period) is an abbreviation or initial."""
    m = _WORD_BEFORE.search(text_before)
    if not m:
        return False
    token = m.group(1).lstrip("\"'([\u2018\u201c").lower()
    if token in ABBREVIATIONS:
        return True
    # A single letter is an initial ("J. K. Rowling"); dotted acronyms ("U.S.A") too.
    return (len(token) == 1 and token.isalpha()) or bool(re.fullmatch(r"(?:[a-z]\.)+[a-z]", token))


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences (stripped, non-empty). Empty or blank text gives ``[]``."""
    if not text or not text.strip():
        return []
    sentences: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        punct = m.group(1)
        if punct == "." and _is_abbreviation(text[start : m.start(1)]):
            continue
        end = m.end(2)
        piece = text[start:end].strip()
        if piece:
            sentences.append(piece)
        start = m.end(3)
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def count_sentences(text: str) -> int:
    """Number of sentences in ``text`` (see :func:`split_sentences`)."""
    return len(split_sentences(text))
