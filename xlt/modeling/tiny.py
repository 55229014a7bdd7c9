"""The offline tiny model: a BPE tokenizer trained by xlt on the bundled demo texts, and a small
XLM-R-architecture multiple-choice model initialised at random from a config.

The tokenizer is built reproducibly at first use and cached under ``$XLT_CACHE`` (default
``~/.cache/xlt``), keyed by a hash of its corpus and settings.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import tokenizers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from xlt.run.files import atomic_dir

ASSETS = Path(__file__).resolve().parent.parent / "assets" / "demo"
# Bump when the tokenizer recipe changes, so cached tokenizers are rebuilt.
TOKENIZER_VERSION = "2"
SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # XLM-R's order: <s>=0, <pad>=1, </s>=2, <unk>=3
_TEXT_FIELDS = ("article", "question", "options", "support", "correct_answer", "distractor1", "distractor2",
                "distractor3", "flores_passage", "mc_answer1", "mc_answer2", "mc_answer3", "mc_answer4",
                "option_a", "option_b", "option_c", "option_d")


def cache_dir() -> Path:
    return Path(os.environ.get("XLT_CACHE", Path.home() / ".cache" / "xlt"))


def corpus_texts(root: Path = ASSETS) -> Iterator[str]:
    """Every text field of the bundled demo files, in a fixed order."""
    for path in sorted(root.rglob("*")):
        if path.suffix == ".jsonl":
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        elif path.suffix == ".parquet":
            rows = pd.read_parquet(path).to_dict("records")
        else:
            continue
        for row in rows:
            for key in _TEXT_FIELDS:
                value = row.get(key)
                if isinstance(value, str):
                    yield value
                elif isinstance(value, list):
                    yield from (v for v in value if isinstance(v, str))


def _train_tokenizer(texts: list[str], vocab_size: int) -> Tokenizer:
    # BPE over SentencePiece-style pre-tokenisation (Metaspace, as XLM-R). The tokenizers Unigram trainer
    # degenerates to characters on a corpus this small, which makes the tiny model's task needlessly hard.
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.NFKC()
    # Punctuation split off words, so "bananas." in a passage and the option "bananas" share a token
    # (without it BPE merges "▁bananas." and the tiny model barely learns the matching task).
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Metaspace(), pre_tokenizers.Punctuation()])
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    # XLM-R's pair template: <s> A </s></s> B </s>; the MC head pools the <s> token.
    ids = {t: tok.token_to_id(t) for t in ("<s>", "</s>")}
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=list(ids.items())
    )
    return tok


def tiny_tokenizer(vocab_size: int = 4000):
    """The offline tokenizer, built at first use and cached.

    ``XLMRobertaTokenizer`` insists on a Unigram model when reloaded, so the BPE tokenizer is wrapped
    in ``PreTrainedTokenizerFast`` with XLM-R's special tokens and pair template.
    """
    from transformers import PreTrainedTokenizerFast

    texts = list(corpus_texts())
    digest = hashlib.sha256(
        json.dumps([texts, vocab_size, tokenizers.__version__, TOKENIZER_VERSION], ensure_ascii=False).encode()
    ).hexdigest()[:16]
    path = cache_dir() / "tokenizers" / f"xlt-tiny-{digest}"
    if not (path / "tokenizer.json").exists():
        raw = _train_tokenizer(texts, vocab_size)
        tok = PreTrainedTokenizerFast(
            tokenizer_object=raw, bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
            unk_token="<unk>", pad_token="<pad>", mask_token="<mask>", model_max_length=512,
        )
        with atomic_dir(path) as tmp:
            tok.save_pretrained(tmp)
    return PreTrainedTokenizerFast.from_pretrained(path)


def tiny_config(tokenizer, tiny_cfg, max_length: int):
    """An XLM-R config for the tiny model, sized for ``tokenizer`` and ``max_length``."""
    from transformers import XLMRobertaConfig

    return XLMRobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=tiny_cfg.hidden_size,
        num_hidden_layers=tiny_cfg.num_hidden_layers,
        num_attention_heads=tiny_cfg.num_attention_heads,
        intermediate_size=tiny_cfg.intermediate_size,
        max_position_embeddings=max_length + 2,  # RoBERTa positions start after the padding index
        type_vocab_size=1,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
