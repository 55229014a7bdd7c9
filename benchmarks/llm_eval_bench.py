"""xlt's LLM scorer vs lm-evaluation-harness vs per-choice scoring: forward tokens and wall time.

One run, one randomly initialised Llama (sized by the flags; its LM head as wide as a real LLM's vocab),
the same upstream-schema Belebele and Global-MMLU files, 5-shot:

* ``xlt``            — :class:`xlt.scoring.llm.scorer.LLMScorer` (one pass per question, head on the last
                       position only);
* ``xlt per-choice`` — the same engine with one forward pass per (question, option);
* ``harness``        — ``lm_eval.simple_evaluate`` with the harness's own prompt templates on the same files
                       and the same model object (``HFLM``), same batch size.

Forward tokens are counted by a hook on the model (``input_ids.numel()``, padding included, for all three).
The script also checks that xlt and the harness predict the same option on every question.

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python benchmarks/llm_eval_bench.py            # CPU, ~1-2 min
    python benchmarks/llm_eval_bench.py --hidden 1024 --layers 8 --vocab 128000 --questions 200 --device cuda
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


class ForwardCounter:
    """Counts tokens and time spent in the model's forward passes."""

    def __init__(self, model, device):
        self.tokens = self.calls = 0
        self.seconds = 0.0
        self.device = device
        model.register_forward_pre_hook(self._pre, with_kwargs=True)
        model.register_forward_hook(self._post)

    def reset(self):
        self.tokens = self.calls = 0
        self.seconds = 0.0

    def _sync(self):
        import torch

        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    def _pre(self, _m, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        self.tokens += int(ids.numel())
        self.calls += 1
        self._sync()
        self._t0 = time.perf_counter()

    def _post(self, _m, _args, _out):
        self._sync()
        self.seconds += time.perf_counter() - self._t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=40, help="Belebele questions per language (2 languages)")
    ap.add_argument("--gmmlu-per-subject", type=int, default=10, help="Global-MMLU test questions per subject (x4)")
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=32000, help="model vocabulary (LM head rows)")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--shots", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    args = ap.parse_args()

    import lm_eval
    import torch
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tests.fixtures.llm import (
        build_tiny_lm,
        corpus,
        harness_predictions,
        llm_root_config,
        write_belebele,
        write_global_mmlu,
        write_harness_tasks,
    )
    from xlt.data.benchmarks import get_benchmark
    from xlt.scoring.llm.scorer import LLMScorer

    root = Path(tempfile.mkdtemp(prefix="xlt_llm_bench_"))
    bele = write_belebele(root / "belebele", n=args.questions)
    gmmlu = write_global_mmlu(root / "gmmlu", test_per_subject=args.gmmlu_per_subject)
    heads = max(2, args.hidden // 64)
    model_dir = build_tiny_lm(root / "model", corpus([bele, gmmlu]), hidden=args.hidden, layers=args.layers,
                              model_vocab=args.vocab, heads=heads, init_std=0.02)
    dtype = getattr(torch, args.dtype)
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype).to(args.device).eval()
    counter = ForwardCounter(model, args.device)
    benchmarks = {"belebele": {"kind": "belebele", "path": str(bele)},
                  "global_mmlu": {"kind": "global_mmlu", "path": str(gmmlu)}}
    jobs = [("belebele", "eng_Latn"), ("belebele", "fra_Latn"), ("global_mmlu", "en")]
    cfg = llm_root_config(benchmarks, {"model": str(model_dir), "num_fewshot": args.shots,
                                       "batch_size": args.batch_size, "device": args.device, "dtype": args.dtype})

    def run_xlt(share: bool) -> tuple[float, dict]:
        scorer = LLMScorer(cfg, model=model, tokenizer=tok, device=torch.device(args.device), progress=False,
                           share_passes=share)
        t0 = time.perf_counter()
        out = {}
        for bench, lang in jobs:
            bcfg = cfg.eval.benchmarks[bench]
            items = get_benchmark(bcfg.kind).load(bcfg, lang)
            scores = scorer.score(items, benchmark=bench, language=lang)
            out.update({(bench, lang, q): s for q, s in zip(items["id"], scores, strict=True)})
        return time.perf_counter() - t0, out

    def run_harness() -> tuple[float, dict]:
        tasks = write_harness_tasks(root / "tasks", bele, gmmlu, langs=("en",))
        tasks = {t: v for t, v in tasks.items() if v[0] != "global_mmlu_lite"}
        lm = HFLM(pretrained=model, tokenizer=tok, batch_size=args.batch_size, device=args.device)
        t0 = time.perf_counter()
        res = lm_eval.simple_evaluate(model=lm, tasks=list(tasks), num_fewshot=args.shots, log_samples=True,
                                      task_manager=TaskManager(include_path=str(root / "tasks")), verbosity="ERROR")
        return time.perf_counter() - t0, harness_predictions(res, tasks)

    rows = {}
    for name, fn in (("xlt", lambda: run_xlt(True)), ("xlt per-choice", lambda: run_xlt(False)),
                     ("harness", run_harness)):
        counter.reset()
        wall, preds = fn()
        rows[name] = {"wall": wall, "fwd_s": counter.seconds, "tokens": counter.tokens, "passes": counter.calls,
                      "preds": preds}

    same = sum(int(np.argmax(rows["xlt"]["preds"][k])) == int(np.argmax(v)) for k, v in rows["harness"]["preds"].items())
    n = len(rows["harness"]["preds"])
    print(f"\nmodel: Llama hidden={args.hidden} layers={args.layers} vocab={args.vocab} {args.dtype} on {args.device}; "
          f"{n} questions ({2 * args.questions} Belebele, {4 * args.gmmlu_per_subject} Global-MMLU), {args.shots}-shot, "
          f"batch {args.batch_size}")
    print(f"{'':16}{'forward tokens':>16}{'forward calls':>15}{'forward s':>11}{'wall s':>9}")
    for name, r in rows.items():
        print(f"{name:16}{r['tokens']:>16,}{r['passes']:>15}{r['fwd_s']:>11.2f}{r['wall']:>9.2f}")
    x, pc, h = rows["xlt"], rows["xlt per-choice"], rows["harness"]
    print(f"\nforward tokens  xlt / per-choice = {x['tokens'] / pc['tokens']:.3f}   (target <= 0.3)")
    print(f"forward tokens  xlt / harness    = {x['tokens'] / h['tokens']:.3f}")
    print(f"wall time       xlt / harness    = {x['wall'] / h['wall']:.3f}   (harness / xlt = {h['wall'] / x['wall']:.2f}x)")
    print(f"forward time    xlt / harness    = {x['fwd_s'] / h['fwd_s']:.3f}")
    print(f"wall time       xlt / per-choice = {x['wall'] / pc['wall']:.3f}")
    print(f"same prediction as the harness on {same}/{n} questions")


if __name__ == "__main__":
    main()
