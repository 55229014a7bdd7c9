"""The shared prefix cache and shared contexts on sliding-window models (Gemma 2 and 3), exactly.

Tiny random Gemma 3 and Gemma 2 models with a **16-token** window on most layers, on prompts of 60-300
tokens, so the window cuts the prefix, the shared context and the suffix: scores with the caches must
equal the full pass's (transformers' own sliding-window masks) within float rounding, predictions
identical. Tolerance measured on these models (float32, 1 and 2 threads): max |delta log-likelihood|
1.9e-6 (Gemma 3), 2.9e-6 (Gemma 2), 7.6e-6 (Llama); asserted at 5e-5.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from xlt.scoring.llm.loglik import ForwardInput, LoglikelihoodEngine

WINDOW = 16
ATOL = 5e-5


def tiny_model(family: str, vocab: int, seed: int = 0):
    """A random tiny causal LM: Gemma 3 (one full-attention layer of four, kv heads 1), Gemma 2
    (alternating, soft-capped attention logits) or Llama (full attention everywhere)."""
    from transformers import (
        Gemma2Config,
        Gemma2ForCausalLM,
        Gemma3ForCausalLM,
        Gemma3TextConfig,
        LlamaConfig,
        LlamaForCausalLM,
    )

    torch.manual_seed(seed)
    common = {"vocab_size": vocab, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
              "num_attention_heads": 4, "max_position_embeddings": 2048, "bos_token_id": 0, "eos_token_id": 1,
              "pad_token_id": 2}
    if family == "gemma3":
        model = Gemma3ForCausalLM(Gemma3TextConfig(
            **common, num_key_value_heads=1, head_dim=16, query_pre_attn_scalar=16, sliding_window=WINDOW,
            layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"]))
    elif family == "gemma2":
        model = Gemma2ForCausalLM(Gemma2Config(**common, num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=16,
                                               sliding_window=WINDOW))
    else:
        model = LlamaForCausalLM(LlamaConfig(**common, num_key_value_heads=2))
    with torch.no_grad():  # larger weights than the default init: clear score differences, no near-ties
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.2)
    return model.eval()


def random_requests(vocab: int, seed: int = 1):
    """A 70-token prefix; 8 questions, three per passage (25-30 tokens), each with its own 5-59 tokens
    and two continuations of 1 and 2 tokens; returns the forward inputs, their prefixes and contexts."""
    g = torch.Generator().manual_seed(seed)
    pre = torch.randint(3, vocab, (70,), generator=g).tolist()
    seqs, passages = [], []
    for q in range(8):
        passage = torch.randint(3, vocab, (30 if q % 3 else 25,),
                                generator=torch.Generator().manual_seed(100 + q // 3)).tolist()
        own = torch.randint(3, vocab, (int(torch.randint(5, 60, (1,), generator=g)),), generator=g).tolist()
        for j in range(2):
            cont = torch.randint(3, vocab, (1 + j,), generator=g).tolist()
            seqs.append(ForwardInput((pre + passage + own + cont)[:-1], [(q, j, cont)]))
            passages.append(len(passage))
    return seqs, pre, passages


@pytest.mark.parametrize("family", ["gemma3", "gemma2", "llama"])
def test_prefix_and_shared_context_caches_equal_the_full_pass(family):
    """The engine with the prefix cache, and with the prefix cache plus each passage's shared context,
    against the plain full pass (batch 3: batches mix passages, one passage spans two batches)."""
    from xlt.scoring.llm.prefix_cache import shared_contexts

    model = tiny_model(family, 300)
    seqs, pre, _ = random_requests(300)
    prefixes = [tuple(pre)] * len(seqs)
    contexts = shared_contexts(seqs, prefixes)
    # every passage is shared (three questions each, two inputs per question), each up to its end or beyond
    assert all(n >= 25 for n in contexts)
    full = LoglikelihoodEngine(model, device="cpu", batch_size=3, progress=False)
    cached = LoglikelihoodEngine(model, device="cpu", batch_size=3, progress=False)
    shared = LoglikelihoodEngine(model, device="cpu", batch_size=3, progress=False)
    assert cached.supports_prefix_cache()
    ref = full.scores(seqs, 8, 2)
    got = cached.scores(seqs, 8, 2, prefixes)
    got_ctx = shared.scores(seqs, 8, 2, prefixes, contexts)
    np.testing.assert_allclose(got, ref, rtol=0, atol=ATOL)
    np.testing.assert_allclose(got_ctx, ref, rtol=0, atol=ATOL)
    assert (got.argmax(1) == ref.argmax(1)).all() and (got_ctx.argmax(1) == ref.argmax(1)).all()
    assert cached.stats.prefix_passes == 1 and shared.stats.context_passes >= 3
    assert shared.stats.tokens < cached.stats.tokens < full.stats.tokens


def test_shared_contexts_groups_inputs_that_agree_past_their_prefix():
    from xlt.scoring.llm.prefix_cache import shared_contexts

    pre = (1, 2, 3)
    passage_a, passage_b = list(range(10, 30)), list(range(40, 60))
    seqs = [ForwardInput(list(pre) + passage_a + [7, 8], [(0, 0, [9])]),
            ForwardInput(list(pre) + passage_a + [5], [(1, 0, [9])]),
            ForwardInput(list(pre) + passage_b + [7], [(2, 0, [9])]),
            ForwardInput(list(pre) + passage_a[:4] + [99] * 20, [(3, 0, [9])]),  # shares only 4 tokens
            ForwardInput(list(pre) + passage_b + [7], [(4, 0, list(range(60, 83)))]),  # scored from token 3
            ForwardInput([5, 6] + passage_a, [(5, 0, [9])])]  # another prefix, alone
    out = shared_contexts(seqs, [pre] * 5 + [(5, 6)])
    # a and b pairs share their passage; question 4's scored tokens start at position 3, so the pair of
    # question 2 and 4 would share nothing before it: too short, no context
    assert out == [20, 20, 0, 0, 0, 0]
    seqs[4] = ForwardInput(list(pre) + passage_b + [6], [(4, 0, [9])])
    assert shared_contexts(seqs, [pre] * 5 + [(5, 6)]) == [20, 20, 20, 0, 20, 0]
    assert shared_contexts(seqs, [pre] * 5 + [(5, 6)], min_tokens=21) == [0] * 6


@pytest.fixture(scope="module", params=["gemma3", "gemma2"])
def gemma_scorer(request, loaded_lm):
    _, tok = loaded_lm
    return request.param, tiny_model(request.param, len(tok)), tok


def test_scorer_on_a_sliding_window_model_uses_the_caches_and_matches_the_full_pass(gemma_scorer, make_cfg,
                                                                                     load_items):
    """LLMScorer on the Belebele fixture (two questions per passage), 1-shot: prompts of 150-300 tokens
    against a 16-token window. Before this change every question fell back to ``full_no_prefix``."""
    from xlt.scoring.llm.scorer import LLMScorer

    family, model, tok = gemma_scorer
    cfg = make_cfg(num_fewshot=1, dtype="float32")
    items = load_items("belebele", "eng_Latn")
    scores, metas = {}, {}
    for name, kw in {"full": {"prefix_cache": False}, "prefix": {"share_contexts": False}, "both": {}}.items():
        scorer = LLMScorer(cfg, model=model, tokenizer=tok, device=torch.device("cpu"), progress=False, **kw)
        scores[name] = scorer.score(items, benchmark="belebele", language="eng_Latn")
        metas[name] = scorer.last_meta
    lengths = [len(t) for t in tok(LLMScorer(cfg, model=model, tokenizer=tok, progress=False).contexts(
        items, benchmark="belebele", language="eng_Latn"))["input_ids"]]
    assert min(lengths) > 5 * WINDOW
    for name in ("prefix", "both"):
        np.testing.assert_allclose(scores[name], scores["full"], rtol=0, atol=ATOL)
        assert (scores[name].argmax(1) == scores["full"].argmax(1)).all()
    cache = metas["both"]["prefix_cache"]
    assert cache["supported"] and cache["questions_per_path"]["prefix_cache"] == 8  # the 1st has other shots
    assert metas["prefix"]["prefix_cache"]["shared_context_questions"] == 0
    assert cache["shared_context_questions"] >= 6 and cache["distinct_contexts"] >= 3
    assert metas["both"]["forward"]["context_passes"] >= 1
    assert (metas["both"]["forward"]["tokens"] < metas["prefix"]["forward"]["tokens"]
            < metas["full"]["forward"]["tokens"])
