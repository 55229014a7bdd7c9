"""Speed of xlt's translation engine vs naive per-row generation, and of a warm-cache rerun.

Both sides use the same tiny random NLLB-shaped model (:func:`xlt.translation.tiny.build_tiny_nllb`),
the same data, batch size and generation limits, in one process:

* **xlt**: passages split into sentences, unique segments only (shared passages and repeated options
  once), length-sorted batches, per-batch generation limit, SQLite cache (cold);
* **baseline**: per-passage generation without sentence splitting or length sorting: rows in dataset
  order, each field (passage, question, 4 options) translated whole, batches in input order;
* **warm rerun**: xlt again on the same data with the cache filled by the first run.

Throughput is counted in *source segments* (sentences + questions + options of every row; the same
work for all three), so ``segments/s`` ratios equal time ratios. A random model never emits EOS, so
every batch generates up to its limit; with a real model EOS comes earlier, for both sides.

    OMP_NUM_THREADS=1 python benchmarks/translate_bench.py [--passages 40] [--questions 3]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402

from xlt.data.schema import TRAIN_FEATURES  # noqa: E402
from xlt.translation.cache import TranslationCache  # noqa: E402
from xlt.translation.engine import translate_dataset  # noqa: E402
from xlt.translation.segment import segment_passage  # noqa: E402
from xlt.translation.tiny import build_tiny_nllb  # noqa: E402
from xlt.translation.translator import HFSeq2SeqTranslator  # noqa: E402

WORDS = (
    "the a student teacher school river city market house friend mother father book letter story "
    "morning evening happy quickly slowly walked found wrote read bought visited learned green small "
    "old new big because when after before many some every their his her our people children day"
).split()


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(5, 22))]
    return " ".join(words).capitalize() + rng.choice(".!?")


def make_data(n_passages: int, q_per_passage: int, seed: int = 0) -> Dataset:
    """RACE-like rows: passages of 3-12 sentences, several questions each, one option shared by many."""
    rng = random.Random(seed)
    rows = []
    for p in range(n_passages):
        passage = " ".join(sentence(rng) for _ in range(rng.randint(3, 12)))
        for q in range(q_per_passage):
            opts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(3)]
            rows.append(
                {
                    "dataset": "bench",
                    "split": "train",
                    "passage_id": f"p{p}",
                    "question_id": f"p{p}q{q}",
                    "passage": passage,
                    "question": sentence(rng)[:-1] + "?",
                    "options": [*opts, "All of the above"],
                    "label": q % 4,
                    "license": "synthetic",
                }
            )
    return Dataset.from_list(rows, features=TRAIN_FEATURES)


def count_segments(ds: Dataset) -> int:
    return sum(len(segment_passage(r["passage"]).sentences) + 1 + len(r["options"]) for r in ds)


def baseline(ds: Dataset, tr: HFSeq2SeqTranslator, tgt: str) -> None:
    """Per-row generation: each field whole, in input order, ``batch_size`` texts per call, no cache."""
    texts = []
    for r in ds:
        texts.extend([r["passage"], r["question"], *r["options"]])
    for i in range(0, len(texts), tr.batch_size):
        tr._generate(texts[i : i + tr.batch_size], "eng_Latn", tgt)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--passages", type=int, default=40)
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--d-model", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

    ds = make_data(args.passages, args.questions)
    n_seg = count_segments(ds)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = [r["passage"] for r in ds] + [r["question"] for r in ds]
        path = build_tiny_nllb(Path(tmp) / "tiny-nllb", corpus, d_model=args.d_model, layers=2)
        tr = HFSeq2SeqTranslator(str(path), batch_size=args.batch_size, max_new_tokens=args.max_new_tokens,
                                 device="cpu")
        tr.translate(["Warm up the model."], "eng_Latn", "fra_Latn")

        t0 = time.perf_counter()
        baseline(ds, tr, "fra_Latn")
        t_base = time.perf_counter() - t0

        with TranslationCache(Path(tmp) / "cache.sqlite") as cache:
            t0 = time.perf_counter()
            cold = translate_dataset(ds, tr, cache, "eng_Latn", "fra_Latn", set_language="fra_Latn")
            t_xlt = time.perf_counter() - t0
            t0 = time.perf_counter()
            warm = translate_dataset(ds, tr, cache, "eng_Latn", "fra_Latn", set_language="fra_Latn")
            t_warm = time.perf_counter() - t0
    assert warm.dataset.to_list() == cold.dataset.to_list()
    c = cold.stats.counts
    print(f"data: {ds.num_rows} rows, {args.passages} passages, {n_seg} source segments "
          f"({c['segments_unique']} unique); batch {args.batch_size}; model d_model={args.d_model}, 2+2 layers; "
          f"torch threads {torch.get_num_threads()}")
    print(f"{'':<34}{'seconds':>10}{'segments/s':>14}")
    for name, t in (("baseline (per row, unsorted)", t_base), ("xlt (sentences, sorted, cache)", t_xlt),
                    ("xlt warm rerun (cache)", t_warm)):
        print(f"{name:<34}{t:>10.3f}{n_seg / t:>14.1f}")
    print(f"speed-up xlt vs baseline: {t_base / t_xlt:.1f}x (target >= 2x)")
    print(f"speed-up warm rerun vs cold xlt: {t_xlt / t_warm:.1f}x (target >= 50x)")


if __name__ == "__main__":
    main()
