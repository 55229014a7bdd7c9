"""Training and evaluation throughput, peak memory and MFU of the real architectures' shapes.

XLM-R base/large, XLM-V base (its ~900k-piece embedding) and InfoXLM base/large, built from their
configurations with random weights (nothing is downloaded) as ``XLMRobertaForMultipleChoice``, fed
synthetic token ids with a realistic length distribution, in bf16 autocast on a GPU (fp32 on CPU):

* lengths: per question, half the questions reach ``--max-length`` (512, truncated passages, as with
  Belebele/RACE passages), the rest uniform between 40% and 100% of it; 4 options per question share
  the question's length; batches are padded to their longest sequence (dynamic padding, random order);
* train: AdamW (fused on CUDA), fp32 master weights, bf16 autocast, ``--batch`` questions per step
  (``--batch`` x 4 sequences), as the Trainer with ``bf16=True`` does;
* eval: no_grad, ``--eval-batch`` questions per forward.

Reported per model and phase: non-padding tokens/s, processed (padded) tokens/s, peak memory, and model
FLOPs utilisation against the GPU's bf16 dense peak: MFU = (6 x N + 12 x L x d x s) x processed tokens /
time / peak for training, (2 x N + 4 x L x d x s) for evaluation, with N the non-embedding parameters,
L layers, d hidden size, s the padded length (the attention term); the embedding lookup costs no FLOPs.

    python benchmarks/gpu_bench.py                       # on a GPU: every model, bf16
    python benchmarks/gpu_bench.py --models xlmr_base --steps 20
    python benchmarks/gpu_bench.py --tiny                # CPU smoke run with tiny shapes (seconds)

``--peak-tflops`` overrides the peak taken from the GPU name (:data:`PEAK_BF16_TFLOPS`); on a CPU no
peak is known and MFU is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

# Shapes from the models' config.json on the Hub (hidden, layers, heads, FFN, vocabulary).
ARCHS: dict[str, dict[str, int]] = {
    "xlmr_base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 250002},
    "xlmr_large": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096, "vocab_size": 250002},
    "xlmv_base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 901629},
    "infoxlm_base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 250002},
    "infoxlm_large": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096, "vocab_size": 250002},
}
# --tiny: the same models scaled down (vocabularies keep their 1 : 3.6 ratio), for a CPU smoke run.
TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}

# bf16 dense tensor-core peak (TFLOP/s, no sparsity) from the vendors' data sheets, by name substring;
# the first match wins, so more specific names come first.
PEAK_BF16_TFLOPS: list[tuple[str, float]] = [
    ("H200", 989.0), ("H100 PCIe", 756.0), ("H100", 989.0), ("GH200", 989.0), ("B200", 2250.0),
    ("A100", 312.0), ("L40S", 362.0), ("L40", 181.0), ("L4", 121.0), ("A10G", 70.0), ("A10", 125.0),
    ("RTX 4090", 165.0), ("A6000", 155.0), ("V100", 125.0),
]


@dataclass
class Result:
    model: str
    phase: str
    params_m: float
    non_embedding_params_m: float
    batch_questions: int
    steps: int
    seconds: float
    real_tokens_per_s: float
    processed_tokens_per_s: float
    padding_share: float
    peak_memory_gb: float | None
    tflops: float
    mfu: float | None


def peak_tflops(device: torch.device, override: float | None) -> float | None:
    if override:
        return override
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((peak for key, peak in PEAK_BF16_TFLOPS if key in name), None)


def build_model(name: str, tiny: bool, max_length: int, device: torch.device):
    from transformers import XLMRobertaConfig, XLMRobertaForMultipleChoice

    shape = dict(ARCHS[name])
    if tiny:
        shape = {**shape, **TINY, "vocab_size": max(1000, shape["vocab_size"] // 250)}
    cfg = XLMRobertaConfig(**shape, max_position_embeddings=max_length + 2, type_vocab_size=1, pad_token_id=1)
    torch.manual_seed(0)
    return XLMRobertaForMultipleChoice(cfg).to(device), cfg


def question_lengths(n: int, max_length: int, gen: torch.Generator) -> torch.Tensor:
    """Half the questions at max_length (truncated), the rest uniform in [0.4, 1] x max_length."""
    short = torch.randint(int(0.4 * max_length), max_length + 1, (n,), generator=gen)
    return torch.where(torch.rand(n, generator=gen) < 0.5, torch.full((n,), max_length), short)


def batches(n_batches: int, batch: int, max_length: int, vocab: int, seed: int):
    """Synthetic MC batches: ids (batch, 4, padded length), attention mask, labels; random order."""
    gen = torch.Generator().manual_seed(seed)
    for _ in range(n_batches):
        lengths = question_lengths(batch, max_length, gen)
        width = int(lengths.max())
        ids = torch.randint(5, vocab, (batch, 4, width), generator=gen)
        mask = (torch.arange(width)[None, None, :] < lengths[:, None, None]).expand(batch, 4, width).long()
        ids = torch.where(mask.bool(), ids, torch.ones_like(ids))  # pad id 1
        yield ids, mask, torch.randint(0, 4, (batch,), generator=gen)


def flops_per_token(cfg, non_embedding: int, width: int, train: bool) -> float:
    attention = cfg.num_hidden_layers * cfg.hidden_size * width
    return 6 * non_embedding + 12 * attention if train else 2 * non_embedding + 4 * attention


def run_phase(name: str, model, cfg, phase: str, batch: int, steps: int, warmup: int, max_length: int,
              device: torch.device, peak: float | None) -> Result:
    train = phase == "train"
    n_params = sum(p.numel() for p in model.parameters())
    non_embedding = n_params - model.roberta.embeddings.word_embeddings.weight.numel()
    opt = None
    if train:
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=device.type == "cuda")
    else:
        model.eval()
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    real = processed = 0
    flops = 0.0
    start = 0.0
    for i, (ids, mask, labels) in enumerate(batches(warmup + steps, batch, max_length, cfg.vocab_size, seed=1)):
        if i == warmup:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            start = time.perf_counter()
        ids, mask, labels = ids.to(device), mask.to(device), labels.to(device)
        with torch.autocast(device.type, dtype=dtype, enabled=device.type == "cuda"), torch.set_grad_enabled(train):
            out = model(input_ids=ids, attention_mask=mask, labels=labels)
        if train:
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
        if i >= warmup:
            real += int(mask.sum())
            processed += mask.numel()
            flops += flops_per_token(cfg, non_embedding, ids.shape[-1], train) * mask.numel()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    mem = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
    tflops = flops / seconds / 1e12
    del opt
    return Result(name, phase, n_params / 1e6, non_embedding / 1e6, batch, steps, seconds, real / seconds,
                  processed / seconds, 1 - real / processed, mem, tflops, tflops / peak if peak else None)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(ARCHS), help=f"comma-separated, from {list(ARCHS)}")
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8, help="questions per training step (x4 sequences)")
    ap.add_argument("--eval-batch", type=int, default=32, help="questions per evaluation forward")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--peak-tflops", type=float, help="the accelerator's bf16 dense peak (default: by GPU name)")
    ap.add_argument("--tiny", action="store_true", help="tiny shapes, length 64, 2 steps: a CPU smoke run")
    ap.add_argument("--json", type=Path, help="also write the results here")
    a = ap.parse_args(argv)
    if a.tiny:
        a.max_length, a.batch, a.eval_batch, a.steps, a.warmup = 64, 2, 4, 2, 1
    names = [m.strip() for m in a.models.split(",") if m.strip()]
    unknown = sorted(set(names) - set(ARCHS))
    if unknown:
        ap.error(f"unknown model(s) {unknown}; choose from {list(ARCHS)}")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    peak = peak_tflops(device, a.peak_tflops)
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({torch.get_num_threads()} threads)"
    print(f"device: {where}; peak bf16 {peak or 'unknown'} TFLOP/s; {'tiny shapes' if a.tiny else 'real shapes'}, "
          f"max length {a.max_length}, train batch {a.batch}x4, eval batch {a.eval_batch}x4, {a.steps} steps")
    results: list[Result] = []
    for name in names:
        try:
            model, cfg = build_model(name, a.tiny, a.max_length, device)
            for phase, batch in (("train", a.batch), ("eval", a.eval_batch)):
                results.append(run_phase(name, model, cfg, phase, batch, a.steps, a.warmup, a.max_length, device, peak))
        except torch.cuda.OutOfMemoryError:
            print(f"{name}: out of GPU memory at batch {a.batch}; try --batch smaller", file=sys.stderr)
        finally:
            model = None
            if device.type == "cuda":
                torch.cuda.empty_cache()
    print(f"\n{'model':<14} {'phase':<6} {'params':>8} {'real tok/s':>11} {'proc tok/s':>11} {'pad':>6} "
          f"{'peak GB':>8} {'TFLOP/s':>8} {'MFU':>6}")
    for r in results:
        mem = f"{r.peak_memory_gb:.1f}" if r.peak_memory_gb is not None else "-"
        mfu = f"{r.mfu:.1%}" if r.mfu is not None else "-"
        print(f"{r.model:<14} {r.phase:<6} {r.params_m:7.1f}M {r.real_tokens_per_s:11.0f} {r.processed_tokens_per_s:11.0f} "
              f"{r.padding_share:6.1%} {mem:>8} {r.tflops:8.2f} {mfu:>6}")
    rows = [asdict(r) for r in results]
    if a.json:
        a.json.write_text(json.dumps({"device": where, "peak_tflops": peak, "tiny": a.tiny, "results": rows}, indent=1,
                                     allow_nan=False) + "\n")
    return rows


if __name__ == "__main__":
    main()
