"""GPU checks: the paths that only run on CUDA, for the day a GPU is lent (``benchmarks/gpu_check.sh``).

Every test here is marked ``gpu`` and skipped where ``torch.cuda.is_available()`` is false (the reason says
so; see ``tests/conftest.py``). Each records what it measured (``record_property("measured", ...)``), which
``benchmarks/gpu_check.sh`` prints in its summary table, so a first GPU run gives the numbers that the
tolerances below are to be re-derived from.

Tolerances are a priori until a GPU has run this file (none had when it was written): bf16 keeps 8
significant bits (relative rounding 2^-9 per operation, 2^-8 per value), fp16 11; the allowed differences
are stated next to each check with the reasoning.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.gpu


ROOT = Path(__file__).resolve().parents[1]


def _cuda_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "DS_ACCELERATOR")}
    return {**env, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "TQDM_DISABLE": "1",
            "PYTHONPATH": str(ROOT)}


# --- training: bf16 against fp32 ----------------------------------------------------------------------

def test_bf16_training_steps_track_fp32(tmp_path, record_property):
    """The train stage on CUDA in bf16 (autocast, fp32 master weights) and in fp32 from the same weights
    and batches: the first step's loss agrees to bf16 rounding of the forward pass (allowed 1%: a
    2-layer model's logits carry a few bf16 roundings of 0.4% each); later steps drift as Adam's
    normalised updates amplify the difference (allowed 5% mean over 10 steps). A wrong autocast
    (fp16 overflow, a loss in bf16) or a precision flag that did not reach the Trainer fails this."""
    from tests.training.conftest import make_cfg, write_train_set
    from xlt.run.layout import RunDir
    from xlt.stages import call_stage

    history = {}
    for precision in ("fp32", "bf16"):
        run = RunDir(tmp_path / precision)
        write_train_set(run, 160, 32)
        cfg = make_cfg(**{"training.precision": precision, "training.max_steps": 10, "training.logging_steps": 1,
                          "training.eval_steps": 10, "training.group_by_length": False})
        call_stage("train", cfg, run)
        metrics = json.loads((run.path / "train_metrics.json").read_text())
        assert metrics["precision"] == precision
        history[precision] = [h["loss"] for h in metrics["train_loss_history"]]
    a, b = np.array(history["fp32"]), np.array(history["bf16"])
    rel = np.abs(a - b) / np.abs(a)
    record_property("measured", f"loss rel. diff step 1 {rel[0]:.2e}, mean {rel.mean():.2e}, max {rel.max():.2e}")
    assert len(a) == len(b) == 10 and np.isfinite(b).all()
    assert rel[0] < 1e-2 and rel.mean() < 5e-2


# --- DeepSpeed on one GPU ------------------------------------------------------------------------------

@pytest.mark.parametrize("deepspeed", ["zero2", "zero3"])
def test_deepspeed_on_one_gpu_trains_evaluates_and_checkpoints(tmp_path, deepspeed, record_property):
    """``accelerate launch --num_processes 1 -m xlt.train training.deepspeed=...`` on the GPU: the whole
    pipeline runs, the model is finite, the checkpoint holds DeepSpeed's engine state (resumable)."""
    pytest.importorskip("deepspeed")
    from safetensors.torch import load_file

    from tests.training.test_distributed import PIPELINE, STEPS, _accelerate
    from xlt.run.layout import RunDir, run_name

    args = ["+recipe=demo_tiny", f"run_root={tmp_path}", *PIPELINE, "training.per_device_train_batch_size=8",
            f"training.deepspeed={deepspeed}"]
    proc = subprocess.run([*_accelerate(1), "-m", "xlt.train", *args], cwd=ROOT, env=_cuda_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = RunDir(tmp_path / run_name(args))
    metrics = json.loads((run.path / "train_metrics.json").read_text())
    losses = [h["loss"] for h in metrics["train_loss_history"]]
    record_property("measured", f"{deepspeed}: precision {metrics.get('precision')}, losses {losses}")
    assert metrics["global_step"] == STEPS and all(np.isfinite(losses))
    assert all(torch.isfinite(w).all() for w in load_file(run.model / "model.safetensors").values())
    assert (run.checkpoints / f"checkpoint-{STEPS}" / "latest").exists()
    assert json.loads((run.eval / "belebele" / "eng_Latn.json").read_text())["n"] == 8


# --- the LLM scorer's cascade attention ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_cascade_attention_on_cuda_equals_attention_over_prefix_and_suffix(dtype, record_property):
    """The shared-prefix attention kernel the LLM scorer uses on CUDA against sdpa over the concatenated
    prefix + suffix with a causal mask, row by row (the CPU test in tests/scoring/llm/test_loglik.py
    checks the CPU kernels). Allowed: float32 1e-5 relative; bf16/fp16 one rounding step of the output
    (2^-7 / 2^-10 relative) plus the rounding of the inputs' products."""
    from types import SimpleNamespace

    import xlt.scoring.llm.cascade as cascade
    from xlt.scoring.llm.cascade import PrefixKV, _State, prefix_cascade_attention

    g = torch.Generator().manual_seed(0)
    heads, kv, d, n_pre, t = 8, 2, 64, 300, 24
    pk, pv = (torch.randn(1, kv, n_pre, d, generator=g).cuda().to(dtype) for _ in range(2))
    q, k, v = (torch.randn(4, h, t, d, generator=g).cuda().to(dtype) for h in (heads, kv, kv))
    token = cascade._STATE.set(_State(PrefixKV(n_pre, [(pk, pv)], [None]), None, None))
    try:
        got, _ = prefix_cascade_attention(SimpleNamespace(layer_idx=0), q, k, v, scaling=d**-0.5)
    finally:
        cascade._STATE.reset(token)
    tol = {torch.float32: (1e-5, 1e-6), torch.bfloat16: (2**-6, 2**-8), torch.float16: (2**-9, 2**-11)}[dtype]
    worst = 0.0
    for r in range(4):
        keys = torch.cat([pk[0], k[r]], 1).repeat_interleave(heads // kv, 0).float()
        values = torch.cat([pv[0], v[r]], 1).repeat_interleave(heads // kv, 0).float()
        mask = torch.ones(t, n_pre + t, dtype=torch.bool, device="cuda").tril(n_pre)
        ref = torch.nn.functional.scaled_dot_product_attention(q[r].float(), keys, values, attn_mask=mask)
        out = got[r].transpose(0, 1).float()
        worst = max(worst, float(((out - ref).abs() / (ref.abs() + tol[1])).max()))
        torch.testing.assert_close(out, ref, rtol=tol[0], atol=tol[1])
    record_property("measured", f"{dtype}: max rel. diff {worst:.2e}")


def test_shared_prefix_scores_on_cuda_equal_the_full_pass(loaded_lm, record_property):
    """The whole LLM scoring path on CUDA: the prefix cache (cascade attention) gives the full pass's
    log-likelihoods (float32 model; allowed 1e-4 absolute, the CPU test measures < 2e-6)."""
    from tests.scoring.llm.test_loglik import LETTERS, QUESTIONS, SHARED
    from xlt.scoring.llm.loglik import LoglikelihoodEngine, build_sequences, encode_pairs
    from xlt.scoring.llm.prefix_cache import plan_prefixes, prefix_texts

    model, tok = loaded_lm
    model = model.cuda()
    try:
        contexts = [SHARED + q for q in QUESTIONS]
        encoded = encode_pairs(tok, contexts, [LETTERS] * len(contexts))
        seqs = build_sequences(encoded, 2048)
        plan = plan_prefixes(tok, seqs, encoded, prefix_texts(contexts, QUESTIONS), max_length=2048,
                             add_bos_token=None)
        cached = LoglikelihoodEngine(model, device="cuda", batch_size=2, progress=False)
        full = LoglikelihoodEngine(model, device="cuda", batch_size=2, progress=False)
        got = cached.scores(seqs, len(contexts), 4, plan.seq_prefix)
        ref = full.scores(seqs, len(contexts), 4)
    finally:
        model.cpu()
    record_property("measured", f"max abs. diff {float(np.abs(got - ref).max()):.2e}")
    assert cached.stats.prefix_passes == 1
    np.testing.assert_allclose(got, ref, atol=1e-4)


# --- padding to a multiple of 8 ------------------------------------------------------------------------

def test_mc_scores_on_cuda_with_padding_to_multiples_of_8_match_the_cpu(tmp_path, tiny_mc, record_property):
    """The MC scorer on CUDA pads every batch to a multiple of 8 (tensor cores) and runs in bf16
    autocast: the padded positions are masked, so the scores equal the CPU's exact-length fp32 scores to
    bf16 rounding (allowed 3e-2 absolute on logits of order 1), and the argmax agrees on >= 90% of the
    items (near-ties may flip in bf16)."""
    from tests.fixtures.benchmarks import write_belebele
    from xlt import config as xcfg
    from xlt.data.benchmarks import BENCHMARKS
    from xlt.scoring.mc import MCScorer

    path, model, tok = tiny_mc
    write_belebele(tmp_path, ["rus_Cyrl"], n=24)
    cfg = xcfg.validate({"eval": {"benchmarks": {"belebele": {"kind": "belebele", "path": str(tmp_path)}}}})
    items = BENCHMARKS["belebele"].load(cfg.eval.benchmarks.belebele, "rus_Cyrl")
    cuda = MCScorer(model, tok, max_length=256, batch_size=5, device="cuda", progress=False)
    lengths = []
    forward = cuda.model.forward

    def spy(**batch):
        lengths.append(batch["input_ids"].shape[-1])
        return forward(**batch)

    cuda.model.forward = spy
    try:
        got = cuda.score(items, benchmark="belebele", language="rus_Cyrl")
    finally:
        del cuda.model.forward
    ref = MCScorer(model, tok, max_length=256, batch_size=5, device="cpu", progress=False).score(
        items, benchmark="belebele", language="rus_Cyrl")
    agree = float((got.argmax(1) == ref.argmax(1)).mean())
    record_property("measured", f"max abs. diff {float(np.abs(got - ref).max()):.2e}, argmax agreement {agree:.2f}, "
                                f"padded lengths {sorted(set(lengths))}")
    assert lengths and all(n % 8 == 0 for n in lengths)
    np.testing.assert_allclose(got, ref, atol=3e-2)
    assert agree >= 0.9


# --- CTranslate2 on CUDA --------------------------------------------------------------------------------

@pytest.mark.parametrize("compute_type", ["float16", "bfloat16", "int8_float16"])
def test_ctranslate2_on_cuda_agrees_with_float32(tmp_path, monkeypatch, compute_type, record_property):
    """The CTranslate2 engine on CUDA in half precision and int8 against its float32 output on the CPU,
    on the tiny NLLB-shaped model (greedy search): the share of identical translations (allowed >= 80%
    for half precision, >= 60% for int8 weights: a random model has near-ties a real one rarely has)."""
    from tests.translation.conftest import PASSAGES, make_cfg
    from xlt.translation.engines import build_translator, ct2
    from xlt.translation.tiny import build_tiny_nllb

    if not ct2.available():
        pytest.skip("ctranslate2 is not installed (pip install 'xlt[ct2]')")
    import ctranslate2

    if ctranslate2.get_cuda_device_count() == 0:
        pytest.skip("this ctranslate2 build sees no CUDA device")
    monkeypatch.setenv("XLT_CACHE", str(tmp_path / "cache"))
    corpus = PASSAGES + ["What is true about item 3?", "Answer one two four", "None of the above"]
    model = build_tiny_nllb(tmp_path / "tiny-nllb", corpus * 3)
    texts = [s for p in PASSAGES for s in p.replace("\n\n", " ").split(". ")] * 2

    def translations(device: str, ctype: str) -> list[str]:
        cfg = make_cfg(kind="hf", engine="ctranslate2", model_name_or_path=str(model), compute_type=ctype,
                       device=device, max_new_tokens=24)
        return build_translator(cfg.translate).translate(texts, "eng_Latn", "fra_Latn")

    ref, got = translations("cpu", "float32"), translations("cuda", compute_type)
    same = float(np.mean([a == b for a, b in zip(ref, got, strict=True)]))
    record_property("measured", f"{compute_type}: identical translations {same:.2f} of {len(texts)}")
    assert same >= (0.6 if compute_type.startswith("int8") else 0.8)


# --- the adaptive batcher on a real out-of-memory --------------------------------------------------------

def test_adaptive_batcher_recovers_from_a_real_cuda_out_of_memory(record_property):
    """A batch that cannot fit (4 GiB per item x 4096 items) raises CUDA's real OutOfMemoryError: the
    batcher halves until a slice fits, keeps finished slices, gives every item's result in order, and the
    memory is free again afterwards."""
    from xlt.batching import AdaptiveBatcher

    per_item = 4 * 2**30  # bytes
    free, total = torch.cuda.mem_get_info()

    def fn(chunk: list[int]) -> list[int]:
        x = torch.empty(len(chunk) * per_item, dtype=torch.uint8, device="cuda")
        del x
        return [i * 2 for i in chunk]

    batcher = AdaptiveBatcher(4096, what="gpu check")
    out = batcher.map(fn, list(range(40)))
    torch.cuda.empty_cache()
    record_property("measured", f"{batcher.reductions} halvings to batch {batcher.batch_size} "
                                f"({free / 2**30:.0f} of {total / 2**30:.0f} GiB free)")
    assert out == [i * 2 for i in range(40)]
    assert batcher.reductions >= 1 and batcher.batch_size * per_item <= free
    assert torch.cuda.mem_get_info()[0] >= free * 0.9


@pytest.fixture(scope="module")
def loaded_lm(tmp_path_factory):
    """The tiny causal LM of tests/scoring/llm (built here too: that conftest is not in scope)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tests.fixtures.llm import build_tiny_lm, corpus, write_belebele

    data = write_belebele(tmp_path_factory.mktemp("llm_data") / "belebele")
    path = build_tiny_lm(tmp_path_factory.mktemp("llm_model"), corpus([data]))
    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


@pytest.fixture(scope="module")
def tiny_mc(tmp_path_factory):
    from tests.scoring.conftest import build_tiny_mc

    return build_tiny_mc(tmp_path_factory.mktemp("tiny_mc"))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-m", "gpu", "-rs"]))
