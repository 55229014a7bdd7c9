"""Log-likelihood engine: harness tokenization, shared forward passes, head gathering, OOM halving."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from xlt.scoring.llm.loglik import (
    LoglikelihoodEngine,
    build_sequences,
    encode_pairs,
    encode_texts,
    resolve_max_length,
)

CONTEXTS = ["P: ka lo mi.\nQ: Ne su?\nA: ta\nB: ri\nC: vo\nD: pe\nAnswer:", "Lomi kata?\nA. su\nB. ne\nAnswer:  ",
            "<s>Already has BOS\nAnswer:"]
LETTERS = [" A", " B", " C", " D"]


def manual_loglik(model, ctx: list[int], cont: list[int]) -> float:
    """Reference: full logits of context+continuation, log-softmax, sum over the continuation."""
    with torch.no_grad():
        logits = model(torch.tensor([ctx + cont])).logits[0]
    logp = torch.log_softmax(logits.float(), -1)
    return float(sum(logp[len(ctx) - 1 + i, t] for i, t in enumerate(cont)))


def test_encode_pairs_matches_the_harness_encode_pair(loaded_lm):
    lm_eval_hf = pytest.importorskip("lm_eval.models.huggingface")
    model, tok = loaded_lm
    hflm = lm_eval_hf.HFLM(pretrained=model, tokenizer=tok, batch_size=1)
    encoded = encode_pairs(tok, CONTEXTS, [LETTERS] * len(CONTEXTS))
    for ctx, (ctx_enc, conts) in zip(CONTEXTS, encoded, strict=True):
        for letter, cont in zip(LETTERS, conts, strict=True):
            assert (ctx_enc, cont) == tuple(hflm._encode_pair(ctx, letter))
    # Trailing spaces of the context moved to the continuation; a BOS-prefixed text gets no second BOS.
    assert encoded[1][1][0] == tok("Lomi kata?\nA. su\nB. ne\nAnswer:   A")["input_ids"][len(encoded[1][0]):]
    assert encoded[2][0][0] == tok.bos_token_id and encoded[2][0][1] != tok.bos_token_id
    assert encode_texts(tok, ["x"], add_bos_token=False) == [tok("x", add_special_tokens=False)["input_ids"]]


def test_letters_share_one_forward_pass_and_match_per_choice_scoring(loaded_lm):
    model, tok = loaded_lm
    encoded = encode_pairs(tok, CONTEXTS, [LETTERS] * len(CONTEXTS))
    shared = build_sequences(encoded, 2048)
    single = build_sequences(encoded, 2048, share=False)
    assert len(shared) == 3 and len(single) == 12
    fast, slow = LoglikelihoodEngine(model, device="cpu", progress=False), LoglikelihoodEngine(model, device="cpu",
                                                                                               progress=False)
    a, b = fast.scores(shared, 3, 4), slow.scores(single, 3, 4)
    np.testing.assert_allclose(a, b, atol=1e-5)
    for q, (ctx, conts) in enumerate(encoded):
        for j, cont in enumerate(conts):
            assert a[q, j] == pytest.approx(manual_loglik(model, ctx, cont), abs=1e-4)
    assert fast.stats.sequences == 3 and slow.stats.sequences == 12
    assert fast.stats.tokens < 0.3 * slow.stats.tokens


def test_multi_token_continuations_group_by_shared_prefix(loaded_lm):
    model, tok = loaded_lm
    conts = [" A", " B", " kalo mi su", " kalo mi ne"]
    encoded = encode_pairs(tok, CONTEXTS[:1], [conts])
    lens = [len(c) for c in encoded[0][1]]
    assert lens[0] == 1 and lens[2] > 1
    seqs = build_sequences(encoded, 2048)
    # " A"/" B" share the bare context; the two long options share it only if they differ in the last token.
    assert len(seqs) in (2, 3)
    got = LoglikelihoodEngine(model, device="cpu", batch_size=2, progress=False).scores(seqs, 1, 4)
    for j, cont in enumerate(encoded[0][1]):
        assert got[0, j] == pytest.approx(manual_loglik(model, encoded[0][0], cont), abs=1e-4)


def test_left_truncation_keeps_the_last_max_length_tokens(loaded_lm):
    model, tok = loaded_lm
    encoded = encode_pairs(tok, CONTEXTS[:1], [LETTERS])
    ctx, conts = encoded[0]
    seqs = build_sequences(encoded, 8)
    assert seqs[0].tokens == (ctx + conts[0])[-9:][:-1] and len(seqs[0].tokens) == 8
    got = LoglikelihoodEngine(model, device="cpu", progress=False).scores(seqs, 1, 4)
    assert got[0, 1] == pytest.approx(manual_loglik(model, ctx[-8:], conts[1]), abs=1e-4)


class _OOMAbove:
    """Wraps a model; raises CUDA's out-of-memory error for batches larger than ``limit``."""

    def __init__(self, model, limit: int):
        self.model, self.limit, self.calls = model, limit, []

    def __call__(self, input_ids, **kw):
        self.calls.append(input_ids.shape[0])
        if input_ids.shape[0] > self.limit:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return self.model(input_ids=input_ids, **kw)

    def get_output_embeddings(self):
        return self.model.get_output_embeddings()


def test_batch_size_halves_on_out_of_memory(loaded_lm):
    model, tok = loaded_lm
    encoded = encode_pairs(tok, CONTEXTS * 3, [LETTERS] * 9)
    seqs = build_sequences(encoded, 2048)
    wrapped = _OOMAbove(model, limit=2)
    engine = LoglikelihoodEngine(wrapped, device="cpu", batch_size=8, progress=False)
    got = engine.scores(seqs, 9, 4)
    assert wrapped.calls[:3] == [8, 4, 2] and engine.batch_size == 2 and engine.stats.oom_halvings == 2
    ref = LoglikelihoodEngine(model, device="cpu", batch_size=8, progress=False).scores(seqs, 9, 4)
    np.testing.assert_allclose(got, ref, atol=1e-5)
    assert engine.stats.batches == 5  # 9 sequences in batches of 2


def test_other_errors_are_not_swallowed(loaded_lm):
    model, tok = loaded_lm
    seqs = build_sequences(encode_pairs(tok, CONTEXTS[:1], [LETTERS]), 2048)
    wrapped = _OOMAbove(model, limit=0)  # even batch 1 runs out of memory: give up with the error
    with pytest.raises(torch.cuda.OutOfMemoryError):
        LoglikelihoodEngine(wrapped, device="cpu", batch_size=2, progress=False).scores(seqs, 1, 4)


def test_max_length_resolution_follows_the_harness(loaded_lm):
    model, tok = loaded_lm
    assert resolve_max_length(model.config, tok) == model.config.max_position_embeddings
    assert resolve_max_length(model.config, tok, 100) == 100
    assert resolve_max_length(object(), tok) == 2048  # the tiny tokenizer has no model_max_length


def test_no_second_bos_when_the_text_starts_with_it_even_with_add_bos_token(loaded_lm):
    """A chat template that writes BOS itself: the harness's ``tok_encode`` adds none, whatever
    ``add_bos_token`` says; neither does xlt."""
    lm_eval_hf = pytest.importorskip("lm_eval.models.huggingface")
    model, tok = loaded_lm
    texts = ["<s><|user|>Ka lo?\n<|assistant|>", "Ka lo?"]
    for add_bos in (True, None, False):
        hflm = lm_eval_hf.HFLM(pretrained=model, tokenizer=tok, batch_size=1, add_bos_token=add_bos)
        assert encode_texts(tok, texts, add_bos) == [hflm.tok_encode(t) for t in texts]
    ids = encode_texts(tok, texts[:1], True)[0]
    assert ids[0] == tok.bos_token_id and ids.count(tok.bos_token_id) == 1


SHARED = "P: ka lo mi.\nQ: Ne su?\nA: ta\nB: ri\nAnswer: A\n\nP: vo pe.\nQ: Da ka?\nA: lo\nB: mi\nAnswer: B\n\n"
QUESTIONS = ["P: su ta.\nQ: Ri vo?\nA: pe\nB: da\nAnswer:", "P: kalo.\nQ: Mine?\nA: su\nB: ta\nAnswer:",
             "P: rivo pe.\nQ: Da?\nA: ka\nB: lo\nAnswer:", "P: mi.\nQ: Ne?\nA: su\nB: ta\nAnswer:"]


def test_shared_prefix_cache_gives_the_full_pass_scores_with_fewer_tokens(loaded_lm):
    from xlt.scoring.llm.prefix_cache import plan_prefixes, prefix_texts

    model, tok = loaded_lm
    contexts = [SHARED + q for q in QUESTIONS] + ["Lomi?\nAnswer:"]
    prefixes = prefix_texts(contexts, QUESTIONS + ["Lomi?\nAnswer:"])
    assert prefixes == [SHARED] * 4 + [""]
    prefixes[3] = "X" + SHARED[1:]  # not the start of question 3's context: must not use the cache
    encoded = encode_pairs(tok, contexts, [LETTERS] * 5)
    seqs = build_sequences(encoded, 2048)
    plan = plan_prefixes(tok, seqs, encoded, prefixes, max_length=2048, add_bos_token=None)
    assert plan.paths == {"prefix_cache": 3, "partial_prefix": 0, "full_no_prefix": 1, "full_unshared": 0, "full_boundary": 1,
                          "full_truncated": 0}
    assert plan.distinct_prefixes == 1 and plan.seq_prefix[3] is None and plan.seq_prefix[0] is not None
    cached = LoglikelihoodEngine(model, device="cpu", batch_size=2, progress=False)
    full = LoglikelihoodEngine(model, device="cpu", batch_size=2, progress=False)
    assert cached.supports_prefix_cache()
    got, ref = cached.scores(seqs, 5, 4, plan.seq_prefix), full.scores(seqs, 5, 4)
    np.testing.assert_allclose(got, ref, atol=1e-5)  # measured: < 2e-6
    assert cached.stats.prefix_passes == 1 and cached.stats.tokens < full.stats.tokens
    # Left truncation: the model input no longer starts with the prefix, so every question falls back.
    short = build_sequences(encoded, 30)
    plan = plan_prefixes(tok, short, encoded, prefixes, max_length=30, add_bos_token=None)
    assert plan.paths["full_truncated"] == 4 and all(p is None for p in plan.seq_prefix)


def test_harness_score_dtype_takes_the_log_softmax_in_the_model_dtype(loaded_lm):
    import copy

    model, tok = loaded_lm
    bf16 = copy.deepcopy(model).to(torch.bfloat16)
    seqs = build_sequences(encode_pairs(tok, CONTEXTS, [LETTERS] * 3), 2048)
    harness = LoglikelihoodEngine(bf16, device="cpu", progress=False).scores(seqs, 3, 4)
    precise = LoglikelihoodEngine(bf16, device="cpu", progress=False, score_dtype="float32").scores(seqs, 3, 4)
    # bf16 log-probabilities are multiples of bf16 steps; float32 ones are not.
    assert all(float(torch.tensor(v).to(torch.bfloat16)) == v for v in harness.ravel())
    assert any(float(torch.tensor(v).to(torch.bfloat16)) != v for v in precise.ravel())
    # Within one bf16 step of each other (bf16 keeps 8 significant bits; measured: 0.24% relative).
    np.testing.assert_allclose(harness, precise, rtol=2 ** -7, atol=0)
    with pytest.raises(ValueError, match="score_dtype"):
        LoglikelihoodEngine(model, device="cpu", score_dtype="float16")


def reference_cascade(q, k, v, prefix, ctx, ctx_len, length, window, scale, softcap=None):
    """Row by row: eager attention (soft-capped, masked by absolute positions as transformers' causal /
    sliding-window masks) over prefix + the row's context + its own tokens, concatenated."""
    pk, pv = prefix
    n_pre, heads, kv, t = pk.shape[-2], q.shape[1], k.shape[1], q.shape[2]
    out = []
    for r in range(q.shape[0]):
        n_ctx = int(ctx_len[r])
        parts_k, parts_v = [pk[0]], [pv[0]]
        key_pos = list(range(length - n_pre, length))
        if n_ctx:
            parts_k.append(ctx[0][r, :, :n_ctx])
            parts_v.append(ctx[1][r, :, :n_ctx])
            key_pos += list(range(length, length + n_ctx))
        start = length + n_ctx
        keys = torch.cat(parts_k + [k[r]], 1).repeat_interleave(heads // kv, 0)
        values = torch.cat(parts_v + [v[r]], 1).repeat_interleave(heads // kv, 0)
        key_pos = torch.tensor(key_pos + list(range(start, start + t)))
        query_pos = torch.arange(start, start + t)[:, None]
        visible = key_pos[None, :] <= query_pos
        if window is not None:
            visible &= key_pos[None, :] > query_pos - window
        s = (q[r].double() @ keys.double().transpose(-1, -2)) * scale
        if softcap is not None:
            s = torch.tanh(s / softcap) * softcap
        w = torch.softmax(s.masked_fill(~visible, float("-inf")), -1)
        out.append((w @ values.double()).transpose(0, 1))
    return torch.stack(out)


CASCADE_CASES = {  # (window, with a shared context, softcap)
    "full": (None, False, None), "full+context": (None, True, None),
    "window": (6, False, None), "window+context": (6, True, None), "window<suffix": (4, True, None),
    "softcap": (6, True, 5.0),
}


@pytest.mark.parametrize("fused", [True, False], ids=["fused-lse-merge", "einsum-fallback"])
@pytest.mark.parametrize("case", list(CASCADE_CASES))
def test_cascade_attention_equals_attention_over_prefix_context_and_suffix(case, fused, monkeypatch):
    """Cascade attention (grouped kv heads, right-padded suffixes, a shared context of each row's own
    length) against eager attention over the concatenated prefix + context + suffix, row by row, masked
    as transformers masks causal and sliding-window layers: the CPU path (fused-kernel calls merged by
    log-sum-exp) and the one-softmax path other devices and soft-capped logits take. On a sliding-window
    layer the prefix cache holds its last ``window - 1`` tokens, as ``DynamicSlidingWindowLayer`` keeps
    them; the window cuts the prefix, the context and (window<suffix) the suffix itself."""
    from types import SimpleNamespace

    import xlt.scoring.llm.cascade as cascade
    from xlt.scoring.llm.cascade import ContextKV, PrefixKV, _State, prefix_cascade_attention

    window, with_ctx, softcap = CASCADE_CASES[case]
    if fused:
        assert cascade._FLASH_CPU is not None  # torch 2.13 has the CPU flash kernel with log-sum-exp
    else:
        monkeypatch.setattr(cascade, "_FLASH_CPU", None)
    g = torch.Generator().manual_seed(0)
    heads, kv, d, length, t, b = 4, 2, 8, 11, 5, 3
    n_pre = length if window is None else window - 1
    pk, pv = torch.randn(1, kv, n_pre, d, generator=g), torch.randn(1, kv, n_pre, d, generator=g)
    q, k, v = (torch.randn(b, h, t, d, generator=g) for h in (heads, kv, kv))
    ctx_len = torch.tensor([3, 0, 2] if with_ctx else [0, 0, 0])
    ctx = (torch.randn(2, kv, 3, d, generator=g), torch.randn(2, kv, 3, d, generator=g))
    rows = torch.tensor([0, 0, 1])  # rows 0 and 1 read entry 0 (row 1 with length 0: none)
    context = ContextKV([ctx], ctx_len, rows) if with_ctx else None
    token = cascade._STATE.set(_State(PrefixKV(length, [(pk, pv)], [window]), context, None))
    try:
        got, _ = prefix_cascade_attention(SimpleNamespace(layer_idx=0), q, k, v, scaling=d**-0.5,
                                          sliding_window=window, softcap=softcap)
    finally:
        cascade._STATE.reset(token)
    assert got.shape == (b, t, heads, d) and got.is_contiguous()
    per_row = (ctx[0][rows], ctx[1][rows])
    ref = reference_cascade(q, k, v, (pk, pv), per_row, ctx_len, length, window, d**-0.5, softcap)
    torch.testing.assert_close(got.double(), ref, rtol=1e-5, atol=1e-6)


def test_passes_for_states_only_stop_at_the_last_layers_attention(loaded_lm):
    """A shared passage's pass is run for its key/value states only: it stops once the last layer's
    states are recorded, so that layer's MLP never sees its tokens (only the prefix's pass and the
    questions' own ones), and the scores are the full pass's."""
    from xlt.scoring.llm.prefix_cache import plan_prefixes, prefix_texts

    model, tok = loaded_lm
    questions = [f"P: su ta ri vo pe ka lo mi ne su ta ri vo pe da ka lo mi ne su.\nQ: {q}\nA: pe\nB: da\nAnswer:" for q in ("Ri vo?", "Mine?", "Da?", "Ne?")]
    contexts = [SHARED + q for q in questions]
    encoded = encode_pairs(tok, contexts, [LETTERS] * 4)
    seqs = build_sequences(encoded, 2048)
    plan = plan_prefixes(tok, seqs, encoded, prefix_texts(contexts, questions), max_length=2048, add_bos_token=None)
    cached = LoglikelihoodEngine(model, device="cpu", batch_size=2, progress=False)
    assert cached.supports_prefix_cache()  # its probe pass before the hook
    seen = []
    handle = model.model.layers[-1].mlp.register_forward_hook(lambda _m, args, _o: seen.append(tuple(args[0].shape[:2])))
    try:
        got = cached.scores(seqs, 4, 4, plan.seq_prefix, plan.seq_context)
    finally:
        handle.remove()
    ref = LoglikelihoodEngine(model, device="cpu", batch_size=2, progress=False).scores(seqs, 4, 4)
    np.testing.assert_allclose(got, ref, atol=1e-5)
    assert cached.stats.context_passes >= 1 and cached.stats.context_tokens > 0
    assert seen[0] == (1, len(plan.seq_prefix[0]))  # the prefix's own pass, then one entry per question batch
    assert len(seen) == 1 + cached.stats.batches
    assert sum(b * t for b, t in seen[1:]) + cached.stats.context_tokens <= cached.stats.padded_tokens - seen[0][1]


def test_cascade_attention_refuses_a_window_its_cache_was_not_kept_for():
    from types import SimpleNamespace

    import xlt.scoring.llm.cascade as cascade
    from xlt.scoring.llm.cascade import PrefixKV, _State, prefix_cascade_attention

    pk = torch.zeros(1, 1, 5, 4)
    token = cascade._STATE.set(_State(PrefixKV(9, [(pk, pk)], [6]), None, None))
    try:
        with pytest.raises(RuntimeError, match="window of 8 tokens but its prefix cache was kept for a window of 6"):
            prefix_cascade_attention(SimpleNamespace(layer_idx=0), *(torch.zeros(1, 1, 2, 4),) * 3, sliding_window=8)
    finally:
        cascade._STATE.reset(token)


def test_prefix_path_leaves_the_model_attention_as_it_was(loaded_lm):
    model, tok = loaded_lm
    before = model.config._attn_implementation
    engine = LoglikelihoodEngine(model, device="cpu", batch_size=2, progress=False)
    ids = tok("ka lo mi ne su ta ri vo")["input_ids"]
    past = engine._encode_prefix(tuple(ids[:4])).kv()
    with torch.inference_mode():
        got = engine._logits_at(torch.tensor([ids[4:]]), torch.tensor([[0, len(ids) - 5]]), past)
        ref = engine._logits_at(torch.tensor([ids]), torch.tensor([[4, len(ids) - 1]]))
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5)
    assert model.config._attn_implementation == before


def test_is_greedy_is_the_harness_s(loaded_lm):
    """Each option's ``is_greedy`` (every continuation token the argmax at its position) is what the harness's
    ``HFLM.loglikelihood`` returns for the same request, the model's own greedy continuation included."""
    lm_eval_hf = pytest.importorskip("lm_eval.models.huggingface")
    from lm_eval.api.instance import Instance

    model, tok = loaded_lm
    ctx = CONTEXTS[0]
    ids = tok(ctx)["input_ids"]
    greedy = []
    with torch.no_grad():
        for _ in range(3):  # the model's own greedy continuation, three tokens long
            greedy.append(int(model(torch.tensor([ids + greedy])).logits[0, -1].argmax()))
    conts = [tok.decode(greedy[:1]), tok.decode(greedy), " A", tok.decode(greedy[:2]) + " ne"]
    encoded = encode_pairs(tok, [ctx], [conts])
    engine = LoglikelihoodEngine(model, device="cpu", batch_size=2, progress=False)
    scores = engine.scores(build_sequences(encoded, 2048), 1, len(conts))
    hflm = lm_eval_hf.HFLM(pretrained=model, tokenizer=tok, batch_size=1)
    reqs = [Instance(request_type="loglikelihood", doc={}, arguments=(ctx, c), idx=i) for i, c in enumerate(conts)]
    harness = hflm.loglikelihood(reqs, disable_tqdm=True)
    assert [bool(g) for _, g in harness] == engine.last_greedy[0].tolist()
    assert engine.last_greedy[0].tolist()[:2] == [True, True] and engine.last_greedy[0, 3] == False  # noqa: E712
    np.testing.assert_allclose(scores[0], [ll for ll, _ in harness], atol=1e-4)
