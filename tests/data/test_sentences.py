"""The offline sentence splitter used by the passage-length filter."""

from __future__ import annotations

import pytest

from xlt.data.sentences import count_sentences, split_sentences


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
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected
    assert count_sentences(text) == len(expected)


def test_long_passage_count():
    text = " ".join(f"Sentence number {i} is here." for i in range(30))
    assert count_sentences(text) == 30
