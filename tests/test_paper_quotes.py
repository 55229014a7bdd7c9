"""The papers' sentences beside the findings: a quote marked verbatim is the paper's text word for word, and
a sentence marked as a paraphrase of the Belebele summary is that summary's text (issue 35).

The reference copies are /work/shared/reference/papers (global-mmlu.txt: the Global-MMLU paper's full text;
belebele-summary.txt: the Belebele paper's abstract verbatim and a source-linked summary of the rest). Their
Markdown emphasis (``**``) and emoji are typography, left out of the quotes. Without the copies the check is
skipped, saying so.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from xlt.data.benchmarks import get_benchmark

ROOT = Path(__file__).resolve().parent.parent
PAPERS = next((p for p in (ROOT / "shared" / "reference" / "papers", ROOT.parent / "shared" / "reference" / "papers")
               if p.is_dir()), None)
SOURCE = {"belebele": "belebele-summary.txt", "global_mmlu": "global-mmlu.txt"}


def plain(text: str) -> str:
    text = text.replace("**", "")
    text = "".join(c for c in text if unicodedata.category(c) not in ("So", "Mn", "Cf"))
    return re.sub(r"\s+", " ", text)


@pytest.mark.skipif(PAPERS is None, reason="the papers' reference copies (shared/reference/papers) are not here")
@pytest.mark.parametrize("kind", sorted(SOURCE))
def test_quotes_are_the_sources_words(kind):
    source = plain((PAPERS / SOURCE[kind]).read_text())
    claims = get_benchmark(kind).report.claims
    for claim in claims:
        if claim.verbatim or "summary of arXiv" in claim.section:  # quoted, or the summary's own words
            assert plain(claim.quote) in source, (kind, claim.id, claim.quote)
        if kind == "belebele" and claim.verbatim:  # the summary's abstract is the paper's; the rest is not
            abstract = source[source.index("Abstract"):source.index("1 Introduction")]
            assert plain(claim.quote) in abstract, claim.id
    # the Global-MMLU paper's full text is at hand: every claim is quoted from it
    if kind == "global_mmlu":
        assert all(c.verbatim for c in claims)


def test_what_is_not_quoted_says_why():
    for kind in ("belebele", "global_mmlu", "xcopa"):
        for claim in get_benchmark(kind).report.claims:
            cited = claim.cited()
            assert cited.startswith("\u201c") == claim.verbatim
            if not claim.verbatim:
                assert cited.startswith("paraphrase (") and ("summary of arXiv" in claim.section
                                                              or "not at hand" in claim.section), claim.id
