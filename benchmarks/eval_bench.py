"""Evaluation throughput: xlt's MC scorer vs a naive loop, same model and items, in one run.

    OMP_NUM_THREADS=1 python benchmarks/eval_bench.py [--questions 360] [--batch-size 32] [--max-length 512]

Model: a random XLM-R multiple-choice model (XLMRobertaConfig, hidden 128, 2 layers) with the offline
tokenizer of ``xlt.modeling.load``. Items: Belebele-shaped questions whose passage lengths vary like the
real ones (about 30-180 words, mean ~80; built from the bundled demo passages' words, seeded).

* naive: dataset order, fixed batch size, every sequence padded to ``max_length``;
* xlt: :class:`xlt.scoring.mc.MCScorer` (length-sorted batches, padding to each batch's longest).

Both must give the same predictions; the script prints questions/s of each and the ratio.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
import torch
from datasets import Dataset
from transformers import XLMRobertaConfig, XLMRobertaForMultipleChoice

from xlt.config.model import ModelConfig
from xlt.data.schema import EVAL_FEATURES
from xlt.modeling.load import load_tokenizer
from xlt.scoring.mc import MCScorer

DEMO = Path(__file__).resolve().parent.parent / "xlt" / "assets" / "demo" / "belebele" / "data" / "eng_Latn.jsonl"


def make_items(n: int, seed: int = 0) -> Dataset:
    rows = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines() if line.strip()]
    words = " ".join(r["flores_passage"] + " " + r["question"] for r in rows).split()
    rng = random.Random(seed)
    items = []
    for i in range(n):
        src = rows[i % len(rows)]
        length = min(180, max(30, int(rng.gauss(80, 35))))
        passage = " ".join(rng.choice(words) for _ in range(length))
        items.append({"id": str(i), "language": "eng_Latn", "passage": passage, "question": src["question"],
                      "options": [src[f"mc_answer{k}"] for k in range(1, 5)],
                      "label": int(src["correct_answer_num"]) - 1})
    return Dataset.from_list(items, features=EVAL_FEATURES)


def naive_scores(model, tok, items: Dataset, batch_size: int, max_length: int) -> np.ndarray:
    out = []
    with torch.inference_mode():
        for start in range(0, len(items), batch_size):
            batch = items[start : start + batch_size]
            first = [p for p in batch["passage"] for _ in range(4)]
            second = [f"{q} {o}" for q, opts in zip(batch["question"], batch["options"], strict=True) for o in opts]
            enc = tok(first, second, truncation="only_first", max_length=max_length, padding="max_length",
                      return_tensors="pt")
            b = len(batch["passage"])
            logits = model(input_ids=enc["input_ids"].view(b, 4, -1),
                           attention_mask=enc["attention_mask"].view(b, 4, -1)).logits
            out.append(logits.float().numpy())
    return np.concatenate(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=360)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=512)
    args = ap.parse_args()

    tok = load_tokenizer(ModelConfig())
    torch.manual_seed(0)
    config = XLMRobertaConfig(vocab_size=len(tok), hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=256, max_position_embeddings=args.max_length + 2,
                              pad_token_id=tok.pad_token_id)
    model = XLMRobertaForMultipleChoice(config).eval()
    items = make_items(args.questions)
    scorer = MCScorer(model, tok, max_length=args.max_length, batch_size=args.batch_size, device="cpu",
                      progress=False)
    scorer.score(items.select(range(8)), benchmark="warmup", language="eng")  # warm up kernels

    t0 = time.perf_counter()
    ref = naive_scores(model, tok, items, args.batch_size, args.max_length)
    t_naive = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = scorer.score(items, benchmark="bench", language="eng")
    t_xlt = time.perf_counter() - t0

    same = float((ref.argmax(1) == ours.argmax(1)).mean())
    maxdiff = float(np.abs(ref - ours).max())
    n = len(items)
    print(f"items: {n} questions x 4 options, batch {args.batch_size}, max_length {args.max_length}, "
          f"torch threads {torch.get_num_threads()}")
    print(f"naive loop (dataset order, pad to max_length): {t_naive:7.2f} s  {n / t_naive:8.1f} questions/s")
    print(f"xlt MCScorer (length-sorted, dynamic padding): {t_xlt:7.2f} s  {n / t_xlt:8.1f} questions/s")
    print(f"speed-up: {t_naive / t_xlt:.2f}x   same predictions: {same:.3f}   max |score diff|: {maxdiff:.2e}")


if __name__ == "__main__":
    main()
