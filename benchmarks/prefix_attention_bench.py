"""Per-token forward time of the LLM prefix path (cascade attention) against a full pass, in one process.

A Llama shaped like llm_eval_bench's "realistic" one (hidden 256, 8 layers, 32k vocab, 4 heads over 2 kv
heads, float32, random weights, 1 thread): a prefix of 800 tokens encoded once, then 8 suffixes of 50
tokens through the cascade (fused kernels merged by log-sum-exp, and the einsum fallback), against a full
pass over the 8 rows of prefix + suffix. Median of 5 alternating passes; per token = time / tokens run
(the suffix tokens for the cascade, all 8 x 850 for the full pass). Prints the logit agreement, the
ratios and a profile of one fused cascade forward.

    OMP_NUM_THREADS=1 python benchmarks/prefix_attention_bench.py
"""

from __future__ import annotations

import cProfile
import pstats
import statistics
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

import xlt.scoring.llm.cascade as cascade_attention
from xlt.scoring.llm.loglik import LoglikelihoodEngine

PREFIX, BATCH, SUFFIX, PASSES = 800, 8, 50, 5


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=32000, hidden_size=256, intermediate_size=512, num_hidden_layers=8,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048)
    engine = LoglikelihoodEngine(LlamaForCausalLM(cfg).eval(), device="cpu", progress=False)
    pre = torch.randint(5, 30000, (PREFIX,))
    past = engine._encode_prefix(tuple(pre.tolist())).kv()
    suf = torch.randint(5, 30000, (BATCH, SUFFIX))
    full = torch.cat([pre[None].expand(BATCH, -1), suf], 1)
    pos_s, pos_f = torch.full((BATCH, 1), SUFFIX - 1), torch.full((BATCH, 1), PREFIX + SUFFIX - 1)
    fused_op = cascade_attention._FLASH_CPU

    def cascade(op):
        cascade_attention._FLASH_CPU = op
        try:
            with torch.inference_mode():
                return engine._logits_at(suf, pos_s, past)
        finally:
            cascade_attention._FLASH_CPU = fused_op

    def full_pass():
        with torch.inference_mode():
            return engine._logits_at(full, pos_f)

    runs = {"fused": lambda: cascade(fused_op), "einsum": lambda: cascade(None), "full": full_pass}
    ref = full_pass()
    for name in ("fused", "einsum"):
        print(f"max |{name} - full pass| logit: {(runs[name]() - ref).abs().max().item():.2e}")
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(PASSES):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    per_full = statistics.median(times["full"]) / (BATCH * (PREFIX + SUFFIX))
    print(f"full pass: {1000 * per_full:.3f} ms/token  raw s {[round(v, 3) for v in times['full']]}")
    for name in ("fused", "einsum"):
        per = statistics.median(times[name]) / (BATCH * SUFFIX)
        print(f"cascade {name}: {1000 * per:.3f} ms/suffix token, {per / per_full:.2f}x a full-pass token"
              f"  raw s {[round(v, 3) for v in times[name]]}")
    prof = cProfile.Profile()
    prof.enable()
    runs["fused"]()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(6)


if __name__ == "__main__":
    main()
