"""A shared head encoded once: the same token ids as encoding every text whole, or every text encoded whole."""

from __future__ import annotations

import logging
import random

import pytest
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

import xlt.scoring.llm.encoding as encoding
from xlt.scoring import tokenizer_cuts
from xlt.scoring.llm.loglik import encode_pairs, encode_texts

LLAMA3 = sorted(tokenizer_cuts.LOCAL_SPLIT_PATTERNS)[0]
# Characters that stress the split rules: whitespace runs, newlines, digits, apostrophes, punctuation,
# accents, CJK, an emoji.
ALPHABET = list("aeioklmnst") + [" ", " ", "  ", "\n", "\n\n", " \n", "\t", "'s", "'ll", "'", "1", "23", "456",
                                 ":", ".", "?", "!", "-", "é", "ß", "中文", "🙂", "A", "Z"]
HEAD = ("P: ka lo mi, it's 2024.\nQ: Ne su?\nA: ta\nB: ri\nAnswer: A\n\n"
        "P: vo pe  -- they'll see 12345 cats.\nQ: Da ka?\nA: lo\nB: mi\nAnswer: B\n\n")


def _tokenizer(pre, *, normalizer=None, texts=()) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<s>", "</s>", "<pad>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(list(texts) or [HEAD * 3, "".join(ALPHABET) * 20], trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")


def gpt2_style():
    return _tokenizer(pre_tokenizers.ByteLevel(add_prefix_space=False))


def llama3_style():
    return _tokenizer(pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]))


def random_rests(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 40))) for _ in range(n)]


@pytest.mark.parametrize("make", [gpt2_style, llama3_style], ids=["gpt2-split", "llama3-split"])
def test_a_shared_head_encoded_once_gives_the_whole_texts_ids(make, monkeypatch):
    tok = make()
    assert tokenizer_cuts.split_safe(tok)
    rng = random.Random(0)
    cuts = []
    real_cut = tokenizer_cuts.head_cut
    monkeypatch.setattr(tokenizer_cuts, "head_cut", lambda t, h, m: cuts.append(real_cut(t, h, m)) or cuts[-1])
    foreign = "P: Die Größe der Straße ist groß, 东京的人口 ist 1.234 — naïve 🙂 café.\nAnswer: C\n\n"
    heads = [HEAD, HEAD.rstrip("\n"), HEAD + "  ", HEAD[:-2] + " \n\n\n", HEAD.replace("\n\n", "\n \n"),
             foreign + HEAD + foreign]
    for head in heads:
        texts = [head + rest for rest in random_rests(rng, 300)]
        for add_bos in (None, False):
            # whole encoding is what the harness's tok_encode does, text by text
            whole = [tok(t, **({} if add_bos is None else {"add_special_tokens": add_bos}))["input_ids"] for t in texts]
            assert encode_texts(tok, texts, add_bos, [head] * len(texts)) == whole
    assert cuts and all(c >= encoding.MIN_HEAD for c in cuts)  # the heads were cut, not encoded whole


def test_contexts_and_continuations_match_the_harness_encode_pair_with_heads(loaded_lm):
    lm_eval_hf = pytest.importorskip("lm_eval.models.huggingface")
    tok = gpt2_style()
    hflm = lm_eval_hf.HFLM(pretrained=loaded_lm[0], tokenizer=tok, batch_size=1)  # its tokenization, this tokenizer
    rng = random.Random(1)
    contexts = [HEAD + r + "\nAnswer:" + rng.choice(["", " ", "  "]) for r in random_rests(rng, 40)]
    letters = [" A", " B", " C", " D"]
    encoded = encode_pairs(tok, contexts, [letters] * len(contexts), None, [HEAD] * len(contexts))
    for ctx, (ctx_enc, conts) in zip(contexts, encoded, strict=True):
        for letter, cont in zip(letters, conts, strict=True):
            assert (ctx_enc, cont) == tuple(hflm._encode_pair(ctx, letter))


def test_tokenizers_whose_pieces_are_not_local_are_encoded_whole():
    meta = _tokenizer(pre_tokenizers.Metaspace())  # a space marker prepended to the text: SentencePiece-style
    lowered = _tokenizer(pre_tokenizers.ByteLevel(add_prefix_space=False), normalizer=normalizers.Lowercase())
    prefixed = _tokenizer(pre_tokenizers.ByteLevel(add_prefix_space=True))
    custom = _tokenizer(pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(r"(?<=a)b|\w+"), behavior="isolated"),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]))
    for tok in (meta, lowered, prefixed, custom):
        assert not tokenizer_cuts.split_safe(tok)
        texts = [HEAD + r for r in random_rests(random.Random(2), 20)]
        assert encode_texts(tok, texts, None, [HEAD] * 20) == [tok(t)["input_ids"] for t in texts]


def test_an_added_token_at_the_cut_sends_the_text_whole():
    tok = gpt2_style()
    cut = tokenizer_cuts.head_cut(tok, HEAD, encoding.MIN_HEAD)
    text = HEAD[:cut - 2] + "<s>" + HEAD[cut + 1:] + "Q?"  # "<s>" straddles the cut: not HEAD + rest any more
    head = text[: len(HEAD)]
    assert encode_texts(tok, [text, HEAD + "Q?"], None, [head, HEAD]) == [tok(text)["input_ids"], tok(HEAD + "Q?")["input_ids"]]


def test_a_wrong_cut_is_caught_by_the_sample_and_every_text_is_encoded_whole(monkeypatch, caplog):
    """The safety net: a cut inside a word (a rule this module got wrong) changes the ids; the whole
    encodings of a sample differ, and every text of the call is encoded whole."""
    tok = gpt2_style()
    enc = tok.backend_tokenizer.encode(HEAD)
    inside = next(start + 1 for (start, end), piece in zip(enc.offsets, enc.tokens, strict=True)
                  if end - start >= 3 and start >= encoding.MIN_HEAD and HEAD[start:end].isalpha())
    monkeypatch.setattr(tokenizer_cuts, "head_cut", lambda t, head, m: inside)  # inside a token of three letters or more
    texts = [HEAD + r for r in random_rests(random.Random(3), 50)]
    with caplog.at_level(logging.WARNING, logger="xlt.scoring.llm.encoding"):
        out = encode_texts(tok, texts, None, [HEAD] * 50)
    assert out == [tok(t)["input_ids"] for t in texts]
    assert "encoded whole" in caplog.text
