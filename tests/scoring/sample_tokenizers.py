"""Tokenizers and texts shared by the tests of the tokenizer measures (xlt/scoring/tokenizer_measures.py) and of
where a tokenizer may cut a text (xlt/scoring/tokenizer_cuts.py): a WordPiece tokenizer with a known vocabulary,
a byte-level BPE, a whole-text BPE (Gemma's kind of pipeline), and texts of many scripts."""

from __future__ import annotations

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

VOCAB = [
    "[UNK]",
    "hello",
    "wor",
    "##ld",
    "the",
    "cat",
    "sat",
    "ca",
    "##t",
    "##s",
    ",",
    ".",
    "!",
    "die",
    "katze",
    "sa",
    "##ß",
    "猫",
    "##坐",
]



def wordpiece():
    """A WordPiece tokenizer with the known vocabulary :data:`VOCAB` (BERT's pre-tokenizer)."""
    wp = models.WordPiece(
        {w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]", max_input_chars_per_word=100
    )
    backend = Tokenizer(wp)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")


# space, Thai SARA AM and half-width katakana sound marks (they extend the grapheme before them), an
# Arabic number sign (no grapheme boundary after it), an emoji sequence, punctuation, digits.
WORDS = [
    "hello", "world,", "cats", "sat.", "die", "Katze", "saß!", "猫坐", "ሰላም", "ነው", "naïve", "e\u0301te\u0301",
    "\u0301x", "กำ", "\u0e33น", "ｶﾞ", "\uff9eｷ", "\u0600١٢", "مرحبا", "Привет", "नमस्ते", "👩\u200d💻", "42", "3.14",
    "«quoted»", "don't", "x", "Ω", "[UNK]",
]
SEPARATORS = [" ", " ", " ", "  ", "\n", " \n ", "\t", ""]


def varied_texts(seed: int, n: int, words: int) -> list[str]:
    import random

    rng = random.Random(seed)
    return [
        "".join(rng.choice(WORDS) + rng.choice(SEPARATORS) for _ in range(rng.randint(1, words))).strip()
        for _ in range(n)
    ]


def byte_level_bpe():
    from tokenizers import decoders, trainers

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(
        varied_texts(0, 300, 30), trainers.BpeTrainer(vocab_size=400, show_progress=False,
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    )
    return PreTrainedTokenizerFast(tokenizer_object=backend)


def whole_text_bpe():
    """Gemma's kind of pipeline: a space marker prepended to the text, spaces replaced, no pre-tokenizer
    (one BPE piece for the whole text)."""
    from tokenizers import normalizers, trainers

    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    backend.train_from_iterator(
        varied_texts(0, 300, 30), trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>"], show_progress=False)
    )
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
