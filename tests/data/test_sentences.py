"""Sentence splitting for the passage filter: NLTK's English Punkt (offline) and the regex fallback."""

from __future__ import annotations

import pytest

from xlt.config.data import SourceConfig
from xlt.data.sentences import PUNKT, count_sentences, sentences, split_sentences, splitter_name
from xlt.data.sources import BuildContext
from xlt.data.sources.mctest import MCTest


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("   \n ", []),
        ("One sentence without a stop", ["One sentence without a stop"]),
        ("Tom ran. Ann sat! Did Bob go? Yes.", ["Tom ran.", "Ann sat!", "Did Bob go?", "Yes."]),
        ("Mr. Smith met Dr. Jones at 3.30 today. They talked.", ["Mr. Smith met Dr. Jones at 3.30 today.", "They talked."]),
        ("J. K. Rowling wrote it. The U.S. is big. It is.", ["J. K. Rowling wrote it.", "The U.S. is big.", "It is."]),
        ('"Stop!" he said. "Why?" She left.', ['"Stop!" he said.', '"Why?"', "She left."]),
        ("He said \"no.\" Then he left.", ['He said "no."', "Then he left."]),
        ("It was 1990. 2000 came later... And then?", ["It was 1990.", "2000 came later...", "And then?"]),
        ("First line.\n\nSecond paragraph starts. (A note.) End.", ["First line.", "Second paragraph starts.", "(A note.)", "End."]),
        ("Prices, e.g. bread, rose. Next.", ["Prices, e.g. bread, rose.", "Next."]),
    ],
)
def test_regex_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_punkt_is_the_splitter():
    assert splitter_name() == PUNKT


# NLTK's English Punkt (what sent_tokenize gives with the punkt_tab English model).
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("Mr. Smith met Dr. Jones at 3.30 today. They talked.", ["Mr. Smith met Dr. Jones at 3.30 today.", "They talked."]),
        ('"I am here," said Mr. Brown. "Come in!" They sat.', ['"I am here," said Mr. Brown.', '"Come in!"', "They sat."]),
        ('"Stop!" he said. "Why?" She left.', ['"Stop!"', "he said.", '"Why?"', "She left."]),
        ("The U.S. Army came. Gen. Grant led it.", ["The U.S. Army came.", "Gen. Grant led it."]),
        ("Tom ran.\n\nAnn sat.", ["Tom ran.", "Ann sat."]),
        # Punkt does not split "..." before a capital, nor a raw MCTest "\newline" escape without a space.
        ("It was 1990. 2000 came later... And then?", ["It was 1990.", "2000 came later... And then?"]),
        ("Tom ran.\\newline\\newlineAnn sat.", ["Tom ran.\\newline\\newlineAnn sat."]),
        ("Prices, e.g. bread, rose. Next.", ["Prices, e.g.", "bread, rose.", "Next."]),
    ],
)
def test_punkt_sentences(text, expected):
    assert sentences(text) == expected
    assert count_sentences(text) == len(expected)


def test_long_passage_count():
    text = " ".join(f"Sentence number {i} is here." for i in range(30))
    assert count_sentences(text) == 30


def _story(n_plain: int, tail: str) -> str:
    return " ".join(f"Sentence {i} is here." for i in range(n_plain)) + " " + tail


@pytest.mark.parametrize(
    ("story", "kept"),
    [
        # 24 + 1 by Punkt ("..." then a capital is one sentence): kept; the regex splitter says 26.
        (_story(24, "It came later... And then it went."), True),
        # Abbreviations and quotes: 24 + 1 sentences.
        (_story(24, '"Mr. Brown met Dr. Who," said Ann.'), True),
        # Paragraph breaks escaped as \newline stay one sentence on the raw text (the reference's rule).
        (_story(24, "Tom ran.\\newline\\newlineAnn sat."), True),
        # A real paragraph break (and a 26th sentence): dropped.
        (_story(24, "Tom ran.\n\nAnn sat."), False),
    ],
)
def test_mctest_kept_dropped_decisions(upstream, tmp_path, story, kept):
    row = upstream.mctest_row("mc500.train.0", story, "one: Who?", ["a", "b", "c", "d"], "A")
    upstream.write_jsonl(tmp_path / "m", "train", [row])
    upstream.write_jsonl(tmp_path / "m", "validation", [row])
    out, stats = MCTest(SourceConfig(path=str(tmp_path / "m"))).load(BuildContext(max_passage_sentences=25))
    assert len(out["train"]) == int(kept)
    assert stats.dropped.get("train", {}) == ({} if kept else {"passage_too_long": 1})
    if kept:
        assert "\\newline" not in out["train"][0]["passage"]  # unescaped after counting
    if story.endswith("went."):
        assert len(split_sentences(story)) == 26  # the regex splitter would have dropped it


def test_max_sentences_bounds_both_splitters():
    """The cheap bound that lets the filter skip splitting must never be below either splitter's count."""
    import random

    from xlt.data.sentences import max_sentences

    rnd = random.Random(0)
    pieces = ["a", "B", " ", ".", "?", "!", '"', ")", "\n", "\u2026", ":", "(", "'", "e.g.", "Mr.", "1", "..", "\u201d"]
    texts = ["".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 60))) for _ in range(2000)]
    texts += ['He said "no." Then... And? Yes! 3.5 e.g. x', "Tom ran.\\newline\\newlineAnn sat.", "End?)\" Next."]
    for text in texts:
        bound = max_sentences(text)
        assert count_sentences(text) <= bound and len(split_sentences(text)) <= bound, text


def test_the_splitter_is_named_without_loading_nltk(monkeypatch):
    """The build report names the splitter before any passage needed it (nltk's import is over a second of every
    build), and names the fallback when a package is missing; once loaded, it names what was loaded."""
    import xlt.data.sentences as module

    module.punkt_tokenizer.cache_clear()
    assert splitter_name() == PUNKT and module.punkt_tokenizer.cache_info().currsize == 0
    real = module.importlib.util.find_spec
    monkeypatch.setattr(module.importlib.util, "find_spec", lambda name, *a: None if name == "punkt" else real(name, *a))
    assert splitter_name() == module.REGEX_FALLBACK
    monkeypatch.undo()
    assert module.punkt_tokenizer() is not None and splitter_name() == PUNKT
