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
