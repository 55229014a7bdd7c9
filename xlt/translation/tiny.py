"""A tiny, randomly initialised NLLB-shaped MT model built offline (for tests, benchmarks and demos).

It has the real architecture (``M2M100ForConditionalGeneration``, which NLLB checkpoints use) and a
real ``NllbTokenizer`` over a small BPE vocabulary trained with ``tokenizers`` on the given texts, with
FLORES language tokens (``fra_Latn``...) as special tokens; every ASCII letter, digit and punctuation
mark is in the vocabulary, so inputs never collapse to ``<unk>``. Its translations are gibberish, but every
code path (language tokens, forced BOS, batching, generation limits, save/load) is the real one.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterable, Sequence
from pathlib import Path

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]


def build_tiny_nllb(
    path: str | Path,
    corpus: Iterable[str],
    languages: Sequence[str] = ("eng_Latn", "fra_Latn", "deu_Latn"),
    vocab_size: int = 400,
    d_model: int = 32,
    layers: int = 1,
    seed: int = 0,
    init_std: float = 1.0,
    heads: int = 2,
    ffn_dim: int | None = None,
    total_vocab: int | None = None,
) -> Path:
    """Save a tiny NLLB-shaped model and tokenizer to ``path`` (loadable with the Auto classes).

    ``d_model``, ``layers`` (encoder and decoder each), ``heads``, ``ffn_dim`` (default ``2 * d_model``) and
    ``total_vocab`` (the vocabulary is padded with unused ``<unusedN>`` entries to this many, so tokenizer
    and embedding match a real checkpoint's size) give it a real model's shape, e.g. NLLB-200-distilled-600M:
    ``d_model=1024, layers=12, heads=16, ffn_dim=4096, total_vocab=256206``.
    """
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import M2M100Config, M2M100ForConditionalGeneration, NllbTokenizer

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    alphabet = list(string.ascii_letters + string.digits + string.punctuation)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, initial_alphabet=alphabet)
    bpe.train_from_iterator(list(corpus), trainer)
    spec = json.loads(bpe.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in spec["merges"]]
    vocab = dict(spec["vocab"])
    if total_vocab is not None:
        for i in range(total_vocab - len(vocab) - len(languages)):
            vocab[f"<unused{i}>"] = len(vocab)
    tokenizer = NllbTokenizer(vocab=vocab, merges=merges, extra_special_tokens=list(languages))
    config = M2M100Config(
        vocab_size=len(tokenizer),
        d_model=d_model,
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=ffn_dim or 2 * d_model,
        decoder_ffn_dim=ffn_dim or 2 * d_model,
        max_position_embeddings=1024,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.eos_token_id,
        # Larger than the usual 0.02, so that outputs depend visibly on the inputs.
        init_std=init_std,
    )
    torch.manual_seed(seed)
    model = M2M100ForConditionalGeneration(config)
    path = Path(path)
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return path
