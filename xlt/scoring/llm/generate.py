"""Zero-shot instruction prompting: greedy generation and extraction of the answer letter.

The prompt is :func:`xlt.scoring.llm.prompts.instruction_prompt` (Bandarkar et al., 2024's format); the answer is
read from the generation by :func:`extract_letter`, which accepts ``A``, ``(A)``, ``A.``, ``A)``,
``Answer: A``, ``The answer is (A)``, ``**A**`` and an exact copy of one option's text. A generation
with no recognisable answer is *unparseable*: it gets no prediction and is counted.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Sequence

import torch

from xlt.batching import AdaptiveBatcher
from xlt.data.schema import LETTERS
from xlt.errors import ConfigError
from xlt.progress import progress_bar
from xlt.scoring.llm.loglik import encode_texts

log = logging.getLogger(__name__)


@functools.cache
def _patterns(n_options: int) -> list[re.Pattern]:
    """The answer patterns for the letters of ``n_options`` options, tried in order; the first match wins."""
    letters = f"[A-{LETTERS[n_options - 1]}]"
    return [
        re.compile(rf"^\s*\(?({letters})\)?\s*$"),  # A   (A)
        re.compile(rf"^\s*\(?({letters})\s*[).:\]\n,]"),  # A.  A)  (A)  A:  A,  A\n...
        re.compile(rf"^\s*\(?({letters})\)?\s+[-–—]"),  # A - text
        re.compile(rf"(?i:answer)(?:\s+is)?\s*(?:[:\-]\s*)?\(?({letters})\b"),  # Answer: A   the answer is (B)
        re.compile(rf"(?i:option|choice)\s*\(?({letters})\b"),  # Option C
        re.compile(rf"\(({letters})\)"),  # ... (C) ...
    ]


def extract_letter(text: str, options: Sequence[str] | None = None) -> int | None:
    """The 0-based option a generated answer names, or None if it names none unambiguously.

    The letters are those of the item's options (A-D for four; without ``options``, four)."""
    cleaned = text.replace("*", "").replace("#", "").strip()
    for pat in _patterns(len(options) if options else 4):
        m = pat.search(cleaned)
        if m:
            return LETTERS.index(m.group(1))
    if options:
        first_line = cleaned.splitlines()[0].strip().rstrip(".") if cleaned else ""
        hits = [i for i, opt in enumerate(options) if opt.strip() and first_line == opt.strip().rstrip(".")]
        if len(hits) == 1:
            return hits[0]
    return None


def chat_text(tokenizer, messages: list[dict[str, str]]) -> str:
    """``messages`` rendered with the tokenizer's chat template, ready for the reply (as the harness's
    ``HFLM.apply_chat_template``)."""
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError("eval.llm.chat_template=true, but the tokenizer has no chat template")
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                         continue_final_message=False)


def apply_chat(tokenizer, user: str, system: str | None) -> str:
    """``user`` (and ``system``) rendered with the tokenizer's chat template, ready for the reply."""
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    return chat_text(tokenizer, messages)


class GreedyGenerator:
    """Batched greedy generation (left padding, longest prompts first, batch halves on out-of-memory)."""

    def __init__(self, model, tokenizer, *, device, batch_size: int = 16, max_new_tokens: int = 16,
                 add_bos_token: bool | None = None, progress: bool = True) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = torch.device(device)
        self.batch_size = max(1, int(batch_size))
        self.max_new_tokens = max_new_tokens
        self.add_bos_token = add_bos_token
        self.progress = progress
        self.generated_tokens = 0
        self.batcher = AdaptiveBatcher(self.batch_size, what="LLM generation")  # halves on OOM, keeps done batches

    def generate(self, prompts: Sequence[str]) -> list[str]:
        tok = self.tokenizer
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        if pad_id is None:
            raise ValueError("the tokenizer has neither a pad nor an EOS token; cannot batch generation")
        enc = encode_texts(tok, list(prompts), self.add_bos_token)
        order = sorted(range(len(enc)), key=lambda i: -len(enc[i]))
        out: list[str | None] = [None] * len(enc)
        bar = progress_bar(total=len(order), desc="LLM generation", unit="q", disable=not self.progress)

        def done(idx: list[int], texts: list[str]) -> None:
            for j, t in zip(idx, texts, strict=True):
                out[j] = t
            bar.update(len(idx))

        self.batcher.batch_size = self.batch_size
        self.batcher.map(lambda idx: self._generate_batch([enc[j] for j in idx], pad_id), order, on_batch=done)
        self.batch_size = self.batcher.batch_size
        bar.close()
        return out  # type: ignore[return-value]

    @torch.inference_mode()
    def _generate_batch(self, batch: list[list[int]], pad_id: int) -> list[str]:
        t = max(len(x) for x in batch)
        ids = torch.full((len(batch), t), pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), t), dtype=torch.long)
        for r, x in enumerate(batch):
            ids[r, t - len(x) :] = torch.tensor(x)
            mask[r, t - len(x) :] = 1
        gen = self.model.generate(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            max_new_tokens=self.max_new_tokens,
            do_sample=False,
            pad_token_id=pad_id,
        )
        new = gen[:, t:]
        self.generated_tokens += int((new != pad_id).sum())
        return self.tokenizer.batch_decode(new, skip_special_tokens=True)
