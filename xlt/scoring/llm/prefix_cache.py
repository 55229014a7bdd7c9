"""Where a shared few-shot prefix's KV cache can replace re-encoding it, exactly.

A causal LM's key/value states at position ``i`` depend only on tokens ``0..i``, so a question whose
model input starts with the tokens of a shared prefix can run just its suffix against that prefix's
cache. That is exact only where the prefix tokens are the first tokens of the question's *own*
harness-style tokenization (``encode_pairs``) — not where the tokenizer merges characters across the
boundary, nor where the context was left-truncated. :func:`plan_prefixes` checks this per question and
records which path each question took. The shared prefix is the prefix text's own tokenization less
its last token: a tokenizer may encode the end of a text differently from the same characters before
more text (GPT-2's pre-tokenizer keeps ``"\n\n"`` whole at the end of a text but splits it before a
letter), and one token less makes that case exact without giving up the cache.
Paths:

* ``prefix_cache`` — the suffix ran against the shared prefix's cache;
* ``full_no_prefix`` — no few-shot prefix (0-shot) or prefix caching is off / unsupported by the model;
* ``full_unshared`` — no other question has the same prefix (nothing to share);
* ``full_boundary`` — the prefix's own tokens are not the start of the question's tokens;
* ``full_truncated`` — the context was left-truncated to ``max_length``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from xlt.scoring.llm.loglik import ForwardInput, encode_texts

PATHS = ("prefix_cache", "full_no_prefix", "full_unshared", "full_boundary", "full_truncated")


@dataclass
class PrefixPlan:
    """Per forward input the prefix whose cache it reuses (or None), and questions per path."""

    seq_prefix: list[tuple[int, ...] | None]
    paths: dict[str, int] = field(default_factory=dict)
    distinct_prefixes: int = 0


def prefix_texts(contexts: Sequence[str], questions: Sequence[str]) -> list[str]:
    """The part of each context before its last occurrence of the question's own prompt text
    (the few-shot examples, plus any chat-template turns and headers before the final question)."""
    out = []
    for ctx, q in zip(contexts, questions, strict=True):
        at = ctx.rfind(q) if q else -1
        out.append(ctx[:at] if at > 0 else "")
    return out


def plan_prefixes(
    tokenizer,
    seqs: Sequence[ForwardInput],
    encoded: Sequence[tuple[list[int], list[list[int]]]],
    prefixes: Sequence[str],
    *,
    max_length: int,
    add_bos_token: bool | None,
    enabled: bool = True,
) -> PrefixPlan:
    """Decide, per question, whether its forward inputs may start from the cache of ``prefixes[q]``.

    ``encoded`` is :func:`~xlt.scoring.llm.loglik.encode_pairs`'s output for the same questions and
    ``seqs`` the forward inputs built from it; ``prefixes[q]`` the text the context of question ``q``
    starts with (see :func:`prefix_texts`).
    """
    n = len(encoded)
    path = ["full_no_prefix"] * n
    key: list[tuple[int, ...] | None] = [None] * n
    if enabled:
        distinct = sorted({p for p in prefixes if p})
        tokens = dict(zip(distinct, encode_texts(tokenizer, distinct, add_bos_token), strict=True))
        for q, ((ctx, conts), text) in enumerate(zip(encoded, prefixes, strict=True)):
            if not text:
                continue
            pre = tokens[text][:-1]  # the last token is left to the suffix (see the module docstring)
            if len(ctx) + max(map(len, conts)) > max_length + 1:
                path[q] = "full_truncated"
            elif not pre or len(ctx) <= len(pre) or ctx[: len(pre)] != pre:
                path[q] = "full_boundary"
            else:
                key[q] = tuple(pre)
                path[q] = "prefix_cache"
        shared = Counter(k for k in key if k is not None)
        for q in range(n):
            if key[q] is not None and shared[key[q]] < 2:
                key[q], path[q] = None, "full_unshared"
    counts = Counter(path)
    return PrefixPlan(
        seq_prefix=[key[s.members[0][0]] for s in seqs],
        paths={p: int(counts.get(p, 0)) for p in PATHS},
        distinct_prefixes=len({k for k in key if k is not None}),
    )
