"""Partial prefix reuse: prefixes that share only their first few-shot examples, exactly.

lm-evaluation-harness's first-n few-shot sampler skips the question itself, so a language's first
questions get other example sets (question 2: examples 0, 1, 3, 4, 5; the others 0-4). Their
prefixes share leading tokens with the common one; the engine encodes prefixes in sorted order and
runs only what a prefix does not share with the one before it, against that one's states (sliding-window
layers included). Scores must equal the full pass's within the tolerance measured for the caches on the
tiny Gemma 3 / Gemma 2 / Llama models (measured here, float32, 1 and 2 threads: max |delta
log-likelihood| 2.9e-6 / 1.9e-6 / 3.3e-6 on log-likelihoods up to -20; asserted at 5e-5 as in
``test_prefix_cache_sliding``), and the tokens run must be exactly the ones not shared.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.scoring.llm.test_prefix_cache_sliding import ATOL, WINDOW, tiny_model
from xlt.scoring.llm.loglik import ForwardInput, LoglikelihoodEngine, worth_reusing

VOCAB = 300


def first_n_requests(n_questions: int = 8, k: int = 5, seed: int = 3):
    """Examples 0-5 (18-26 random tokens each, BOS first); question ``q``'s prefix is the first ``k``
    examples other than ``q`` (the harness's first-n rule), then its own 5-40 tokens and two
    continuations of 1 and 2 tokens. Returns the forward inputs and each one's prefix."""
    g = torch.Generator().manual_seed(seed)
    examples = [
        torch.randint(3, VOCAB, (int(torch.randint(18, 27, (1,), generator=g)),), generator=g).tolist()
        for _ in range(k + 1)
    ]
    seqs, prefixes = [], []
    for q in range(n_questions):
        pre = [0] + [t for e in [e for e in range(k + 1) if e != q][:k] for t in examples[e]]
        own = torch.randint(3, VOCAB, (int(torch.randint(5, 40, (1,), generator=g)),), generator=g).tolist()
        for j in range(2):
            cont = torch.randint(3, VOCAB, (1 + j,), generator=g).tolist()
            seqs.append(ForwardInput((pre + own + cont)[:-1], [(q, j, cont)]))
            prefixes.append(tuple(pre))
    return seqs, prefixes


def unshared_tokens(prefixes) -> int:
    """Tokens the engine must run for the distinct ``prefixes``: each in sorted order less the leading
    tokens it shares with the one before it, where those are worth reusing."""
    total, before = 0, ()
    for pre in sorted(set(prefixes)):
        shared = 0
        while shared < min(len(pre), len(before)) and pre[shared] == before[shared]:
            shared += 1
        total += len(pre) - (shared if worth_reusing(shared, len(pre)) else 0)
        before = pre
    return total


@pytest.mark.parametrize("family", ["gemma3", "gemma2", "llama"])
def test_prefixes_that_share_their_first_examples_reuse_them_and_equal_the_full_pass(family):
    model = tiny_model(family, VOCAB)
    seqs, prefixes = first_n_requests()
    assert min(map(len, prefixes)) > 5 * WINDOW  # the window cuts every prefix and the reused parts
    full = LoglikelihoodEngine(model, device="cpu", batch_size=3, progress=False)
    cached = LoglikelihoodEngine(model, device="cpu", batch_size=3, progress=False)
    assert cached.supports_prefix_cache()
    ref = full.scores(seqs, 8, 2)
    got = cached.scores(seqs, 8, 2, prefixes)
    np.testing.assert_allclose(got, ref, rtol=0, atol=ATOL)
    assert (got.argmax(1) == ref.argmax(1)).all()
    distinct = set(prefixes)
    assert len(distinct) == 6 and cached.stats.prefix_passes == 6
    # questions 1-5 share examples 0..q-1 with the common prefix (and question 0 with nobody): the
    # engine ran exactly the tokens they do not share, far fewer than all prefixes' tokens
    expected = unshared_tokens(prefixes)
    assert cached.stats.prefix_tokens == expected < 0.75 * sum(map(len, distinct))


def test_a_prefix_that_extends_or_shares_little_with_the_one_before():
    """A prefix that continues the one before it runs only its new tokens; one that shares fewer than
    ``worth_reusing`` asks runs whole. Both exact."""
    model = tiny_model("gemma3", VOCAB)
    g = torch.Generator().manual_seed(7)
    base = [0] + torch.randint(3, VOCAB, (4,), generator=g).tolist() + [100]
    base += torch.randint(3, VOCAB, (55,), generator=g).tolist()
    # sorted: base, longer (base and 20 more tokens: runs those 20), other (shares 5 tokens with longer:
    # too few, runs whole)
    other = base[:5] + [200] + torch.randint(3, VOCAB, (54,), generator=g).tolist()
    longer = base + torch.randint(3, VOCAB, (20,), generator=g).tolist()
    seqs, prefixes = [], []
    for q, pre in enumerate([base, other, longer]):
        own = torch.randint(3, VOCAB, (12,), generator=g).tolist()
        seqs.append(ForwardInput((pre + own)[:-1], [(q, 0, own[-1:])]))
        prefixes.append(tuple(pre))
    ref = LoglikelihoodEngine(model, device="cpu", progress=False).scores(seqs, 3, 1)
    cached = LoglikelihoodEngine(model, device="cpu", progress=False)
    got = cached.scores(seqs, 3, 1, prefixes)
    np.testing.assert_allclose(got, ref, rtol=0, atol=ATOL)
    assert cached.stats.prefix_tokens == len(base) + 20 + len(other)


def test_plan_sends_prefixes_sharing_their_first_examples_to_the_partial_path():
    """``plan_prefixes`` on contexts whose few-shot sets follow the first-n rule: the common prefix's
    questions on ``prefix_cache``, the ones sharing a leading part on ``partial_prefix``, one sharing
    too little on ``full_unshared``."""
    from xlt.scoring.llm.loglik import build_sequences, encode_pairs
    from xlt.scoring.llm.prefix_cache import plan_prefixes, prefix_texts

    class Chars:
        """A tokenizer of one id per character (BOS 1 first): every boundary is exact."""

        bos_token_id, eos_token_id = 1, 2

        def decode(self, token_id):
            return "\x01"

        def __call__(self, texts, add_special_tokens=True):
            return {"input_ids": [[1] * add_special_tokens + [ord(c) for c in t] for t in texts]}

    examples = [f"Example {i}: " + "abcdefghij"[i] * 30 + "\n\n" for i in range(6)]
    questions = [f"Question {q}?" for q in range(8)]
    prefixes_text = ["".join([examples[e] for e in range(6) if e != q][:5]) for q in range(8)]
    prefixes_text[7] = "Z" * 200  # another few-shot set altogether: shares nothing
    contexts = [p + q for p, q in zip(prefixes_text, questions, strict=True)]
    tok = Chars()
    encoded = encode_pairs(tok, contexts, [[" A", " B"]] * 8)
    seqs = build_sequences(encoded, 4096)
    plan = plan_prefixes(
        tok, seqs, encoded, prefix_texts(contexts, questions), max_length=4096, add_bos_token=None
    )
    # 5 and 6 share examples 0-4; 1-4 share examples 0..q-1 with them (at least 1/5 of the prefix);
    # 0 shares "Example " only (9 tokens: under 1/8 of its prefix), 7 nothing
    assert plan.paths["prefix_cache"] == 2 and plan.paths["partial_prefix"] == 4
    assert plan.paths["full_unshared"] == 2
    assert plan.distinct_prefixes == 5
    assert [p is not None for p in plan.seq_prefix] == [False] + [True] * 6 + [False]  # one input each


@pytest.mark.parametrize("family", ["gemma3", "gemma2"])
def test_scorer_5shot_first_questions_take_the_partial_path_and_match_the_full_pass(
    family, loaded_lm, make_cfg, load_items
):
    """LLMScorer, Belebele fixture, 5-shot (the harness's first-n rule): the first questions reuse the
    examples they share with the others; scores equal the cache-off run's."""
    from xlt.scoring.llm.scorer import LLMScorer

    _, tok = loaded_lm
    model = tiny_model(family, len(tok))
    cfg = make_cfg(num_fewshot=5, dtype="float32")
    items = load_items("belebele", "eng_Latn")
    scores, metas = {}, {}
    for name, kw in {"full": {"prefix_cache": False}, "cached": {}}.items():
        scorer = LLMScorer(cfg, model=model, tokenizer=tok, device=torch.device("cpu"), progress=False, **kw)
        scores[name] = scorer.score(items, benchmark="belebele", language="eng_Latn")
        metas[name] = scorer.last_meta
    np.testing.assert_allclose(scores["cached"], scores["full"], rtol=0, atol=ATOL)
    assert (scores["cached"].argmax(1) == scores["full"].argmax(1)).all()
    paths = metas["cached"]["prefix_cache"]["questions_per_path"]
    assert (
        paths["prefix_cache"] == len(items) - 5
        and paths["partial_prefix"] == 4
        and paths["full_unshared"] == 1
    )
    forward = metas["cached"]["forward"]
    assert forward["prefix_passes"] == 5 and forward["tokens"] < metas["full"]["forward"]["tokens"]
