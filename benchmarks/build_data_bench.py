"""Benchmark: build the full-size English training set with xlt vs. a pandas re-implementation of the reference.

Generates a synthetic local copy of all six sources at their real sizes (~71k kept questions; RACE-like
passages of ~15-20 sentences, MultiRC one row per option, MCScript XML, ...) in a temporary folder,
then, in one run:

* xlt: the ``build_data`` stage, ``xlt.stages.build_data`` (read, convert, check every row, save_to_disk, TSV, report);
* baseline: the reference ``assemble_training_set.py`` logic re-implemented row by row with pandas
  (``read_json`` + ``DataFrame.apply(axis=1)``, MCScript siblings looked up with ``.loc`` per row),
  using the same sentence splitter, writing the same TSV.

Prints rows/second for both and the ratio. Usage::

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python benchmarks/build_data_bench.py [--scale 1.0] [--skip-baseline]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np
import pandas as pd

from xlt.config import validate
from xlt.data.sentences import count_sentences
from xlt.run.layout import RunDir
from xlt.stages import call_stage

# ---- synthetic upstream copies --------------------------------------------------------------------------

_rng = random.Random(0)
VOCAB = ["".join(_rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(_rng.randint(2, 9))) for _ in range(3000)]


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def sentence(rng: random.Random, lo: int = 8, hi: int = 22) -> str:
    s = words(rng, rng.randint(lo, hi))
    return s[0].upper() + s[1:] + "."


def passage(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(lo, hi)))


def question(rng: random.Random, cloze: float = 0.0) -> str:
    q = words(rng, rng.randint(6, 14))
    return (q + " _ .") if rng.random() < cloze else q.capitalize() + "?"


def options(rng: random.Random, k: int = 4) -> list[str]:
    out: list[str] = []
    while len(out) < k:
        o = words(rng, rng.randint(1, 6))
        if o not in out:
            out.append(o)
    return out


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def generate(root: Path, scale: float = 1.0) -> dict[str, dict[str, str]]:
    rng = random.Random(1)
    n = lambda x: max(1, int(x * scale))  # noqa: E731
    for split, n_pass in (("train", n(11500)), ("validation", n(650))):
        rows = []
        for p in range(n_pass):
            art = passage(rng, 8, 27)  # ~10% over 25 sentences
            for _ in range(rng.randint(3, 5)):
                rows.append({"example_id": f"high{p}.txt", "article": art, "answer": rng.choice("ABCD"),
                             "question": question(rng, 0.04), "options": options(rng)})
        write_jsonl(root / "race" / f"{split}.jsonl", rows)
    for split, n_rows in (("train", n(11679)), ("validation", n(1000))):
        rows = []
        for _ in range(n_rows):
            o = options(rng)
            rows.append({"question": question(rng, 0.03), "distractor3": o[0], "distractor1": o[1],
                         "distractor2": o[2], "correct_answer": o[3],
                         "support": "" if rng.random() < 0.09 else passage(rng, 2, 8)})
        write_jsonl(root / "sciq" / f"{split}.jsonl", rows)
    qid = 0
    for split, n_par in (("train", n(456)), ("validation", n(83))):
        rows = []
        for p in range(n_par):
            para = "".join(f"<b>Sent {i}: </b>{sentence(rng)}<br>" for i in range(1, rng.randint(10, 28)))
            for _ in range(rng.randint(10, 13)):
                qid += 1
                k = rng.randint(2, 9)
                labels = [0] * k
                for j in rng.sample(range(k), min(k, rng.choice([1, 1, 2, 3]))):
                    labels[j] = 1
                q = question(rng)
                for a, (text, lab) in enumerate(zip(options(rng, k), labels, strict=True)):
                    rows.append({"paragraph": para, "question": q, "answer": text,
                                 "idx": {"paragraph": p, "question": qid, "answer": a}, "label": lab})
        write_jsonl(root / "multirc" / f"{split}.jsonl", rows)
    for split, n_story in (("train", n(300)), ("validation", n(50))):
        rows = []
        for s in range(n_story):
            story = "\\newline".join(passage(rng, 3, 6) for _ in range(3))
            for k in range(4):
                rows.append({"idx": f"mc500.{split}.{s}.{k}", "question": f"{rng.choice(['one', 'multiple'])}: {question(rng)}",
                             "story": story, "answer_options": dict(zip("ABCD", options(rng), strict=True)),
                             "answer": rng.choice("ABCD")})
        write_jsonl(root / "mctest" / f"{split}.jsonl", rows)
    xml = ['<?xml version="1.0" encoding="utf-8"?>', "<data>"]
    for p in range(n(3500)):
        xml.append(f'<instance id="{p}" scenario="s"><text>{passage(rng, 5, 20)}</text><questions>')
        for q in range(rng.randint(2, 6)):
            a, b = options(rng, 2)
            c = rng.random() < 0.5
            xml.append(f'<question id="{q}" text={quoteattr(question(rng))} type="text">'
                       f'<answer correct="{c}" id="0" text={quoteattr(a)}/>'
                       f'<answer correct="{not c}" id="1" text={quoteattr(b)}/></question>')
        xml.append("</questions></instance>")
    xml.append("</data>")
    (root / "mcscript").mkdir(parents=True, exist_ok=True)
    (root / "mcscript" / "train-data.xml").write_text("\n".join(xml), encoding="utf-8")
    for split, n_rows in (("train", n(4638)), ("validation", n(500))):
        write_jsonl(root / "reclor" / f"{split}.jsonl",
                    [{"context": passage(rng, 3, 8), "question": question(rng), "answers": options(rng),
                      "label": str(rng.randint(0, 3)), "id_string": f"{split}_{i}"} for i in range(n_rows)])
    return {name: {"path": str(root / name)} for name in ("race", "sciq", "multirc", "mctest", "mcscript", "reclor")}


# ---- baseline: the reference script's logic, row by row with pandas -------------------------------------

COLS = ["dataset", "split", "passage_id", "question_id", "passage", "question",
        "answer1", "answer2", "answer3", "answer4", "correct_answer", "correct_answer_num"]
SPLIT = {"train": "train", "validation": "dev"}


def _read(root: Path, name: str) -> pd.DataFrame:
    return pd.concat([pd.read_json(root / name / f"{s}.jsonl", lines=True).assign(split=SPLIT[s])
                      for s in ("train", "validation")], ignore_index=True)


def baseline(root: Path, out_tsv: Path) -> int:
    np.random.seed(0)
    parts = []
    # RACE
    df = _read(root, "race")
    df = df.loc[~df.question.str.contains("_")].copy()
    df["num_sentences"] = df.article.apply(count_sentences)
    df[["answer1", "answer2", "answer3", "answer4"]] = df.apply(lambda r: pd.Series(r["options"]), axis=1)
    df["correct_answer_num"] = df.answer.apply(lambda a: ord(a) - 64)
    df["correct_answer"] = df.apply(lambda r: r["options"][r["correct_answer_num"] - 1], axis=1)
    df = df.rename(columns={"example_id": "passage_id", "article": "passage"})
    df["question_id"] = df.groupby("passage_id").cumcount()
    parts.append(df.loc[df.num_sentences <= 25].assign(dataset="RACE")[COLS])
    # SciQ
    df = _read(root, "sciq")
    df = df.loc[~df.question.str.contains("_")].copy()
    df["num_sentences"] = df.support.apply(count_sentences)
    new = ["answer1", "answer2", "answer3", "answer4"]
    df[new] = df.apply(lambda x: pd.Series(np.random.choice(
        x[["distractor1", "distractor2", "distractor3", "correct_answer"]], 4, replace=False), index=new), axis=1)
    df["correct_answer_num"] = df.apply(lambda r: next(i for i in range(1, 5) if r[f"answer{i}"] == r["correct_answer"]), axis=1)
    df["passage_id"] = df.groupby("support").ngroup()
    df = df.loc[df.support.str.len() >= 1].reset_index().rename(columns={"support": "passage", "index": "question_id"})
    parts.append(df.loc[df.num_sentences <= 25].assign(dataset="sciQ")[COLS])
    # MultiRC
    df = _read(root, "multirc")
    df["pid"] = df.idx.apply(lambda d: d["paragraph"])
    df["qid"] = df.idx.apply(lambda d: d["question"])
    rows = []
    for (split, pid, qid), g in df.groupby(["split", "pid", "qid"], sort=False):
        sents = g.paragraph.iloc[0].split("<br>")
        sents = [s.split("</b>", 1)[1] for s in sents if "</b>" in s]
        if g.label.sum() != 1 or len(g) < 4 or len(sents) > 25:
            continue
        answers = g[["answer", "label"]].to_dict("records")
        chosen = answers
        while len(chosen) != 4 or not any(a["label"] for a in chosen):
            chosen = list(np.random.choice(answers, 4, replace=False))
        r = {"dataset": "MultiRC", "split": split, "passage_id": pid, "question_id": qid,
             "passage": " ".join(sents), "question": g.question.iloc[0]}
        for i, a in enumerate(chosen, start=1):
            r[f"answer{i}"] = a["answer"]
            if a["label"]:
                r["correct_answer"], r["correct_answer_num"] = a["answer"], i
        rows.append(r)
    parts.append(pd.DataFrame(rows, columns=COLS))
    # MCTest
    df = _read(root, "mctest")
    df["passage"] = df.story.str.replace("\\newline", "\n", regex=False)
    df["question"] = df.question.str.split(":", n=1).str[1].str.strip()
    df[["answer1", "answer2", "answer3", "answer4"]] = df.apply(lambda r: pd.Series([r["answer_options"][k] for k in "ABCD"]), axis=1)
    df["correct_answer_num"] = df.answer.apply(lambda a: "ABCD".index(a) + 1)
    df["correct_answer"] = df.apply(lambda r: r[f"answer{r['correct_answer_num']}"], axis=1)
    df["num_sentences"] = df.passage.apply(count_sentences)
    df["passage_id"], df["question_id"] = df.idx, df.idx
    parts.append(df.loc[df.num_sentences <= 25].assign(dataset="MCTest_500")[COLS])
    # MCScript2.0
    recs = []
    for inst in ET.parse(root / "mcscript" / "train-data.xml").getroot():
        text = inst.find("text").text
        for q in inst.find("questions"):
            r = {"split": "train", "passage_id": inst.get("id"), "passage": text, "question_id": q.get("id"),
                 "question": q.get("text"), "num_sentences": count_sentences(text)}
            for a in q:
                r["answer_" + a.get("id")] = a.get("text")
                if a.get("correct") == "True":
                    r["correct_answer"] = a.get("text")
            recs.append(r)
    ms = pd.DataFrame(recs)
    ms = ms.loc[ms.num_sentences <= 25]

    def mcscript_row(row):
        sim = ms.loc[(ms.passage_id == row.passage_id) & (ms.question_id != row.question_id)]
        pool = sim[["answer_0", "answer_1"]].to_numpy().flatten() if len(sim) else ms.correct_answer.to_numpy()
        own = [row["answer_0"], row["answer_1"]]
        while True:
            two = np.random.choice(pool, 2, replace=False)
            if two[0] not in own and two[1] not in own and two[0] != two[1]:
                break
        new = np.random.choice(np.concatenate([two, own]), 4, replace=False)
        out = {f"answer{i}": new[i - 1] for i in range(1, 5)}
        out["correct_answer_num"] = 1 + list(new).index(row["correct_answer"])
        return pd.Series(out)

    ms[["answer1", "answer2", "answer3", "answer4", "correct_answer_num"]] = ms.apply(mcscript_row, axis=1)
    parts.append(ms.assign(dataset="MCScript2.0")[COLS])
    # ReClor
    df = _read(root, "reclor")
    df[["answer1", "answer2", "answer3", "answer4"]] = df.apply(lambda r: pd.Series(r["answers"]), axis=1)
    df["correct_answer_num"] = df.label.astype(int) + 1
    df["correct_answer"] = df.apply(lambda r: r["answers"][r["correct_answer_num"] - 1], axis=1)
    df = df.rename(columns={"context": "passage"})
    df["passage_id"] = df["question_id"] = df.id_string
    parts.append(df.assign(dataset="ReClor")[COLS])
    combined = pd.concat(parts, ignore_index=True)
    combined.to_csv(out_tsv, sep="\t", index=False)
    return len(combined)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the real sizes to generate")
    ap.add_argument("--skip-baseline", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="xlt-bench-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        sources = generate(root / "src", args.scale)
        print(f"generated synthetic sources in {time.perf_counter() - t0:.1f} s")
        cfg = validate({"data": {"sources": sources}})
        t0 = time.perf_counter()
        summary = call_stage("build_data", cfg, RunDir(root / "run"))
        t_xlt = time.perf_counter() - t0
        n_xlt = summary["train"] + summary["dev"]
        print(f"xlt:      {n_xlt:>7,} rows in {t_xlt:6.1f} s = {n_xlt / t_xlt:8,.0f} rows/s "
              f"(train {summary['train']:,}, dev {summary['dev']:,}; save_to_disk + TSV + report included)")
        if not args.skip_baseline:
            t0 = time.perf_counter()
            n_base = baseline(root / "src", root / "baseline.tsv")
            t_base = time.perf_counter() - t0
            print(f"baseline: {n_base:>7,} rows in {t_base:6.1f} s = {n_base / t_base:8,.0f} rows/s (pandas row-by-row, TSV)")
            print(f"ratio (xlt rows/s / baseline rows/s): {(n_xlt / t_xlt) / (n_base / t_base):.2f}x")


if __name__ == "__main__":
    main()
