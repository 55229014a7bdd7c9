"""Training throughput: xlt (dynamic padding + length-grouped batches) vs a run_swag-style baseline
(every example padded to max_length, random batches), same tiny model, data, batch size and steps.

Throughput is counted in non-padding tokens per second (tokens that carry information); the ratio
is printed at the end. A third row shows dynamic padding without length grouping, to separate the
two effects. Run:

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python benchmarks/train_bench.py [--steps 60] [--max-length 128]
        [--vary-lengths]

The bundled demo passages are all about the same length; ``--vary-lengths`` prepends 0-7 other demo
passages to each one (deterministically), so passage lengths spread out as in RACE and Belebele, which
is where length grouping pays off.
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
from transformers import Trainer, TrainingArguments, default_data_collator  # noqa: E402

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
    ap.add_argument("--vary-lengths", action="store_true", help="spread passage lengths (see module docstring)")
    a = ap.parse_args()
    torch.set_num_threads(1)

    model_cfg = ModelConfig(max_length=a.max_length)
    tok = load_tokenizer(model_cfg)
    rows = demo_rows()
    raw = Dataset.from_list(vary_lengths(rows) if a.vary_lengths else rows)
    feats = tokenize_mc(raw, tok, a.max_length)
    lengths = sorted(feats["length"])
    print(f"data: {len(feats)} questions x 4 options; option length median {lengths[len(lengths) // 2]}, "
          f"min {lengths[0]}, max {lengths[-1]} tokens; max_length {a.max_length}; batch {a.batch}; {a.steps} steps")

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        base_feats = pad_to_max(feats, tok.pad_token_id, a.max_length)
        results = [
            train("baseline (pad to max_length, random)", model_cfg, tok, base_feats, default_data_collator, "random", a.steps, a.batch, out),
            train("dynamic padding, random", model_cfg, tok, feats.remove_columns(["length"]), MCCollator(tok), "random", a.steps, a.batch, out),
            train("xlt (dynamic padding + group_by_length)", model_cfg, tok, feats, MCCollator(tok), "group_by_length", a.steps, a.batch, out),
        ]
    print(f"\n{'variant':<42} {'seconds':>8} {'real tok':>10} {'padding':>8} {'real tok/s':>11}")
    for r in results:
        print(f"{r['name']:<42} {r['seconds']:8.2f} {r['real_tokens']:10d} {r['padding_share']:8.1%} {r['tokens_per_s']:11.0f}")
    ratio = results[2]["tokens_per_s"] / results[0]["tokens_per_s"]
    print(f"\nxlt / baseline throughput (non-padding tokens/s): {ratio:.2f}x")


if __name__ == "__main__":
    main()
