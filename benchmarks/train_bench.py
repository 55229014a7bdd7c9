"""Training throughput: xlt (dynamic padding + length-grouped batches) vs HF ``run_swag.py``, same tiny
model, data, batch size and steps. Two baselines, both printed with their ratio:

* run_swag's **default**: dynamic padding per batch (``DataCollatorForMultipleChoice``), random batches;
* run_swag with ``--pad_to_max_length``: every example padded to max_length, random batches.

Throughput is counted in non-padding tokens per second (tokens that carry information). Run:

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python benchmarks/train_bench.py [--steps 60] [--max-length 128]
        [--lengths demo|varied|realistic]

Length distributions: ``demo`` (the bundled passages, all about the same length); ``varied`` prepends
0-7 other demo passages to each one; ``realistic`` (use ``--max-length 512``) is the distribution of
Belebele passages and MCTest stories, where about half the questions reach 512 tokens: every other
question gets a passage longer than max_length (truncated), the others 0-15 extra passages (~30-500
tokens). With half the questions at max_length almost every random batch pads to max_length, so
dynamic padding and length grouping can gain little there: measured side by side with the real
run_swag.py on such data, xlt's steps were as fast as run_swag's default.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import DataCollatorForMultipleChoice, Trainer, TrainingArguments, default_data_collator  # noqa: E402

from xlt.config.model import ModelConfig  # noqa: E402
from xlt.modeling.features import MCCollator, tokenize_mc  # noqa: E402
from xlt.modeling.load import load_model, load_tokenizer  # noqa: E402

RACE = Path(__file__).resolve().parents[1] / "xlt" / "assets" / "demo" / "race" / "train.jsonl"
SCIQ = Path(__file__).resolve().parents[1] / "xlt" / "assets" / "demo" / "sciq" / "train.jsonl"


def vary_lengths(rows: list[dict]) -> list[dict]:
    """Prepend ``i % 8`` other passages to row ``i``: a spread of passage lengths, same questions."""
    passages = [r["passage"] for r in rows]
    n = len(passages)
    return [{**r, "passage": " ".join([passages[(i * 7 + j) % n] for j in range(1, i % 8 + 1)] + [r["passage"]])}
            for i, r in enumerate(rows)]


def realistic_lengths(rows: list[dict]) -> list[dict]:
    """Even rows: 24 extra passages (past 512 tokens, truncated); odd rows: 0-15 (see the docstring)."""
    passages = [r["passage"] for r in rows]
    n = len(passages)

    def extra(i: int) -> int:
        return 24 if i % 2 == 0 else (i // 2) % 16

    return [{**r, "passage": " ".join([passages[(i * 7 + j) % n] for j in range(1, extra(i) + 1)] + [r["passage"]])}
            for i, r in enumerate(rows)]


def demo_rows() -> list[dict]:
    """Bundled RACE + SciQ demo rows as (passage, question, options, label)."""
    rows = []
    for line in RACE.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        rows.append({"passage": r["article"], "question": r["question"], "options": r["options"], "label": "ABCD".index(r["answer"])})
    for line in SCIQ.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        opts = [r["correct_answer"], r["distractor1"], r["distractor2"], r["distractor3"]]
        # Rotate so the gold option is not always first (deterministic).
        k = len(rows) % 4
        rows.append({"passage": r["support"], "question": r["question"], "options": opts[k:] + opts[:k], "label": (4 - k) % 4})
    return rows


class CountingCollator:
    """Wraps a collator; counts real (attention) and padded tokens of every batch it builds."""

    def __init__(self, inner):
        self.inner, self.real, self.padded = inner, 0, 0

    def __call__(self, features):
        batch = self.inner(features)
        self.real += int(batch["attention_mask"].sum())
        self.padded += batch["attention_mask"].numel()
        return batch


def pad_to_max(feats: Dataset, pad_id: int, max_length: int) -> Dataset:
    """The baseline's features: every option padded to max_length at tokenization time (run_swag style)."""

    def pad(batch):
        ids = [[s + [pad_id] * (max_length - len(s)) for s in item] for item in batch["input_ids"]]
        mask = [[[1] * len(s) + [0] * (max_length - len(s)) for s in item] for item in batch["input_ids"]]
        return {"input_ids": ids, "attention_mask": mask}

    return feats.map(pad, batched=True, desc="pad to max_length").remove_columns(["length"])


def train(name, model_cfg, tok, feats, collator, sampling, steps, batch, out) -> dict:
    model = load_model(model_cfg, tok, seed=0)
    counter = CountingCollator(collator)
    args = TrainingArguments(
        output_dir=str(out / name), max_steps=steps, per_device_train_batch_size=batch, learning_rate=1e-3,
        logging_strategy="no", save_strategy="no", eval_strategy="no", report_to="none", use_cpu=True,
        train_sampling_strategy=sampling, seed=0, disable_tqdm=True, average_tokens_across_devices=False,
        dataloader_num_workers=0, remove_unused_columns=False,  # keep `length` for the sampler (as xlt does)
    )
    trainer = Trainer(model=model, args=args, train_dataset=feats, data_collator=counter)
    start = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - start
    return {"name": name, "seconds": wall, "real_tokens": counter.real, "padded_tokens": counter.padded,
            "tokens_per_s": counter.real / wall, "padding_share": 1 - counter.real / counter.padded}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--lengths", choices=["demo", "varied", "realistic"], default="demo",
                    help="passage length distribution (see the module docstring)")
    a = ap.parse_args()
    torch.set_num_threads(1)

    model_cfg = ModelConfig(max_length=a.max_length)
    tok = load_tokenizer(model_cfg)
    rows = demo_rows()
    shape = {"demo": lambda r: r, "varied": vary_lengths, "realistic": realistic_lengths}[a.lengths]
    raw = Dataset.from_list(shape(rows))
    feats = tokenize_mc(raw, tok, a.max_length)
    lengths = sorted(feats["length"])
    at_max = sum(n >= a.max_length for n in lengths) / len(lengths)
    print(f"data ({a.lengths}): {len(feats)} questions x 4 options; length median {lengths[len(lengths) // 2]}, "
          f"min {lengths[0]}, max {lengths[-1]} tokens, {at_max:.0%} at max_length {a.max_length}; batch {a.batch}; "
          f"{a.steps} steps")

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        base_feats = pad_to_max(feats, tok.pad_token_id, a.max_length)
        results = [
            train("run_swag --pad_to_max_length (random)", model_cfg, tok, base_feats, default_data_collator, "random", a.steps, a.batch, out),
            train("run_swag default (dynamic padding, random)", model_cfg, tok, feats.remove_columns(["length"]),
                  DataCollatorForMultipleChoice(tok), "random", a.steps, a.batch, out),
            train("xlt (dynamic padding + group_by_length)", model_cfg, tok, feats, MCCollator(tok), "group_by_length", a.steps, a.batch, out),
        ]
    print(f"\n{'variant':<42} {'seconds':>8} {'real tok':>10} {'padding':>8} {'real tok/s':>11}")
    for r in results:
        print(f"{r['name']:<42} {r['seconds']:8.2f} {r['real_tokens']:10d} {r['padding_share']:8.1%} {r['tokens_per_s']:11.0f}")
    xlt = results[2]["tokens_per_s"]
    print(f"\nxlt / run_swag default (dynamic padding) throughput, non-padding tokens/s: {xlt / results[1]['tokens_per_s']:.2f}x")
    print(f"xlt / run_swag --pad_to_max_length throughput, non-padding tokens/s:   {xlt / results[0]['tokens_per_s']:.2f}x")


if __name__ == "__main__":
    main()
