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
* ``partial_prefix`` — no other question has the same prefix, but it starts with enough of the same
  tokens as another prefix (:func:`~xlt.scoring.llm.loglik.worth_reusing`; the harness's first-n
  few-shot sets of a language's first questions skip the question itself, so question 3's examples are
  0, 1, 2, 4, 5 where the others' are 0-4): those tokens run once for both (the engine encodes
  prefixes in sorted order, each reusing the states of the leading tokens it shares with the one
  before it) and the suffix runs against the prefix's cache;
* ``full_no_prefix`` — no few-shot prefix (0-shot) or prefix caching is off / unsupported by the model;
* ``full_unshared`` — no other question has the same prefix or one that starts with enough of the
  same tokens (nothing to share);
* ``full_boundary`` — the prefix's own tokens are not the start of the question's tokens;
* ``full_truncated`` — the context was left-truncated to ``max_length``.

Shared contexts: after the prefix, questions may share more tokens — Belebele asks several questions
about one passage, and the prompt's ``P: <passage>`` comes first. :func:`shared_contexts` finds, among
the forward inputs of one prefix, groups whose tokens agree past the prefix (on the forward inputs' own
tokens, so there is no boundary to check: a token's key/value states depend only on the tokens up to
it), and the engine runs each group's common tokens once. A question counts in ``shared_context`` if
its inputs read such a context; its path stays ``prefix_cache``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from xlt.scoring.llm.loglik import ForwardInput, encode_texts, worth_reusing

PATHS = ("prefix_cache", "partial_prefix", "full_no_prefix", "full_unshared", "full_boundary", "full_truncated")


@dataclass
class PrefixPlan:
    """Per forward input the prefix whose cache it reuses (or None), and questions per path."""

    seq_prefix: list[tuple[int, ...] | None]
    paths: dict[str, int] = field(default_factory=dict)
    distinct_prefixes: int = 0
    # per forward input, how many tokens after its prefix it shares with others (0: none)
    seq_context: list[int] = field(default_factory=list)
    shared_context_questions: int = 0
    distinct_contexts: int = 0


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
    share_contexts: bool = True,
) -> PrefixPlan:
    """Decide, per question, whether its forward inputs may start from the cache of ``prefixes[q]``.

    ``encoded`` is :func:`~xlt.scoring.llm.loglik.encode_pairs`'s output for the same questions and
    ``seqs`` the forward inputs built from it; ``prefixes[q]`` the text the context of question ``q``
    starts with (see :func:`prefix_texts`). With ``share_contexts``, the forward inputs of one prefix
    that agree on more tokens after it share those too (:func:`shared_contexts`).
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
        linked = _linked(list(shared))
        for q in range(n):
            if key[q] is not None and shared[key[q]] < 2:
                if key[q] in linked:
                    path[q] = "partial_prefix"
                else:
                    key[q], path[q] = None, "full_unshared"
    counts = Counter(path)
    seq_prefix = [key[s.members[0][0]] for s in seqs]
    seq_context = shared_contexts(seqs, seq_prefix) if share_contexts else [0] * len(seqs)
    extended = {s.members[0][0] for s, n in zip(seqs, seq_context, strict=True) if n}
    return PrefixPlan(
        seq_prefix=seq_prefix,
        paths={p: int(counts.get(p, 0)) for p in PATHS},
        distinct_prefixes=len({k for k in key if k is not None}),
        seq_context=seq_context,
        shared_context_questions=len(extended),
        distinct_contexts=len({(pre, tuple(s.tokens[len(pre) : len(pre) + n]))
                               for s, pre, n in zip(seqs, seq_prefix, seq_context, strict=True) if n}),
    )


def _linked(prefixes: list[tuple[int, ...]]) -> set[tuple[int, ...]]:
    """The distinct prefixes whose shared leading tokens run once for two of them: in sorted order (as
    the engine encodes them) a prefix and the one before it, where the later one reuses the states of
    the tokens they share (:func:`~xlt.scoring.llm.loglik.worth_reusing`, the engine's own rule).
    Sorted, a prefix shares the most leading tokens with its neighbours, and dropping the prefixes in
    no such pair leaves the pairs' neighbours as they were."""
    ordered = sorted(prefixes)
    out: set[tuple[int, ...]] = set()
    for a, b in zip(ordered, ordered[1:], strict=False):
        if worth_reusing(_common(a, b, 0, min(len(a), len(b))), len(b)):
            out.update((a, b))
    return out


# A shared context shorter than this is not worth a pass of its own.
MIN_CONTEXT_TOKENS = 8


def _common(a: Sequence[int], b: Sequence[int], start: int, stop: int) -> int:
    """Length of the common run of ``a`` and ``b`` from ``start`` (at most up to ``stop``)."""
    i = start
    while i < stop and a[i] == b[i]:
        i += 1
    return i - start


def shared_contexts(seqs: Sequence[ForwardInput], seq_prefix: Sequence[tuple[int, ...] | None],
                    min_tokens: int = MIN_CONTEXT_TOKENS) -> list[int]:
    """Per forward input, how many tokens right after its prefix it shares with the other inputs of its
    group (0: none): inputs of one prefix sorted by their tokens, consecutive ones that agree on at
    least ``min_tokens`` (and at least half of the group's common run so far) form a group, which
    shares its common run. A shared run ends before the input's first scored position, so every
    scored logit is still computed by the input's own pass."""
    out = [0] * len(seqs)
    by_prefix: dict[tuple[int, ...], list[int]] = {}
    for i, pre in enumerate(seq_prefix):
        if pre:
            by_prefix.setdefault(pre, []).append(i)
    for pre, members in by_prefix.items():
        start = len(pre)
        members.sort(key=lambda i: seqs[i].tokens[start:])

        def close(group: list[int], run: int) -> None:
            if len(group) > 1 and run >= min_tokens:
                for i in group:
                    out[i] = run

        group: list[int] = []
        run = 0
        for i in members:
            limit = len(seqs[i].tokens) - len(seqs[i].members[0][2])  # first scored position
            if group:
                first = seqs[group[0]].tokens
                common = _common(first, seqs[i].tokens, start, min(start + run, limit))
                if common >= min_tokens and 2 * common >= run:
                    group.append(i)
                    run = common
                    continue
                close(group, run)
            group, run = [i], limit - start
        close(group, run)
    return out
