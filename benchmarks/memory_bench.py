"""Peak memory of the offline demo with one pathological 10 MB passage added, against the plain demo.

Three runs of ``python -m xlt.train +recipe=demo`` (stages build_data, train, evaluate), each a fresh
process whose peak resident set size (``ru_maxrss`` of the finished child, via ``os.wait4``) is read:

* ``plain``: the bundled demo;
* ``10MB train passage``: a copy of the demo RACE sample with one extra row whose ``article`` is 10 MB
  of ordinary prose (the anomaly policy drops it as ``field_too_long`` before sentence splitting);
* ``10MB eval passage``: a copy of the demo Belebele sample whose English file has one extra item with a
  10 MB passage (benchmark items are kept; features cut every text by characters before tokenization).

Target (issue 14): each at most 1.3x the plain demo's peak. Run:

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python benchmarks/memory_bench.py [--mb 10]

``--measures`` (issue 50) measures the tokenizer measures (``xlt/scoring/tokenizer_measures.py``) instead,
this tree's against those of a git revision (``--before-rev``, default ``main``: its module read with
``git show`` and put in place of this tree's in the child process), each variant a fresh process:

* **evaluation with one huge item** (``--mb``, e.g. 30): ``python -m xlt.train +recipe=demo
  stages=[evaluate] eval.model=<multilingual-e5-small>`` (untrained, a seeded head; 40 Belebele and Global-MMLU questions of every
  bundled language) whose English Belebele file has an item with a passage of ``--mb`` MB of prose as its
  first line, with no measures (``benchmark_measures`` patched out: what evaluation costs without them),
  with the measures of ``--before-rev`` and with this tree's; and the plain demo evaluation;
* **the measures alone** on multilingual-e5-small's tokenizer (XLM-R's, 250k pieces): one language of
  ``--mmlu-questions`` synthetic Global-MMLU-sized questions (14,042: Global-MMLU Full's per language;
  question ~250 characters, four options ~40), and one item of ``--mb`` MB; peak RSS of the process and
  its rise over the loaded tokenizer, wall and CPU seconds.

A variant whose resident memory passes ``--cap-gb`` is killed (shown as ``> cap``): the measures of the
old revision on a 30 MB item take ~14.5 GB (issue 50), more than a shared machine can spare. The measures'
cache is a fresh folder per process. Run:

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python benchmarks/memory_bench.py --measures --mb 30 [--cap-gb 6]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO / "xlt" / "assets" / "demo"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled",
       "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}


def prose(megabytes: float) -> str:
    sentence = "The children walked to the old market by the river and bought bread for their grandmother. "
    return sentence * int(megabytes * 1_000_000 / len(sentence))


def run(args: list[str]) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of ``python -m xlt.train +recipe=demo args`` in a fresh process."""
    start = time.perf_counter()
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "xlt.train", "+recipe=demo", *args], cwd=REPO, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=err)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err.seek(0)
        sys.exit(f"run failed ({proc.returncode}):\n{err.read().decode()[-3000:]}")
    return usage.ru_maxrss / 1024, time.perf_counter() - start  # Linux: ru_maxrss in KiB


# The child of a --measures variant: argv = variant (none | before | after), the old module's path, the
# measures' cache folder, then the job (evaluate: xlt.train's arguments; alone: mmlu <n> | huge <mb>).
# The variant set-up every child shares (tokenizer_memory_bench.py too).
CHILD_HEAD = r"""
import json, resource, sys, time, importlib.util
from pathlib import Path
variant, old_path, cache, job, *rest = sys.argv[1:]
import xlt.stages.evaluate as ev
from xlt.scoring import tokenizer_measures as tm
if variant == "before":
    spec = importlib.util.spec_from_file_location("tokenizer_measures_before", old_path)
    tm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tm)
tm._cache_root = lambda: Path(cache)
ev.benchmark_measures = (lambda *a, **k: None) if variant == "none" else tm.benchmark_measures
if job == "evaluate":
    from xlt.cli import make_main
    sys.argv = ["xlt.train", *rest]
    make_main(None)()
    sys.exit(0)
sys.path.insert(0, str(Path.cwd() / "benchmarks"))
"""
CHILD = CHILD_HEAD + r"""
from memory_bench import mmlu_items, prose
from transformers import AutoTokenizer
from xlt.modeling.packaged import checkpoint_dir
tok = AutoTokenizer.from_pretrained(checkpoint_dir())
n = float(rest[0])
items = mmlu_items(int(n)) if job == "mmlu" else [{"id": "0", "question": "Which?", "options": ["a", "b"],
                                                   "passage": prose(n)}]
loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t, c = time.perf_counter(), time.process_time()
counts = tm.language_counts(tok, items, "eng_Latn")
print(json.dumps({"loaded": loaded, "wall": time.perf_counter() - t, "cpu": time.process_time() - c,
                  "tokens": counts["tokens"], "words": counts["words"], "continued": counts["continued"]}))
"""


def mmlu_items(n: int, seed: int = 0) -> list[dict]:
    """``n`` synthetic Global-MMLU questions of its lengths (question ~250 characters, four options ~40),
    distinct, from the demo's prose recombined."""
    rows = (ASSETS / "race" / "train.jsonl").read_text().splitlines()
    words = " ".join(json.loads(row)["article"] for row in rows).split()
    rng = random.Random(seed)

    def text(chars: int) -> str:
        out: list[str] = []
        while sum(map(len, out)) + len(out) < chars:
            out.append(rng.choice(words))
        return " ".join(out)

    return [{"id": str(i), "question": text(rng.randint(80, 420)), "options": [text(rng.randint(10, 70))
                                                                            for _ in range(4)]}
            for i in range(n)]


def measures_main(args: argparse.Namespace) -> None:
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        old = tmp / "tokenizer_measures_before.py"
        old.write_text(subprocess.run(["git", "show", f"{args.before_rev}:xlt/scoring/tokenizer_measures.py"],
                                      cwd=REPO, check=True, capture_output=True, text=True).stdout)
        bele = tmp / "belebele"
        shutil.copytree(ASSETS / "belebele", bele)
        eng = bele / "data" / "eng_Latn.jsonl"
        lines = eng.read_text().splitlines()
        item = json.loads(lines[0])
        item.update(link="https://example.org/huge", question_number=1, flores_passage=prose(args.mb))
        eng.write_text("\n".join([json.dumps(item, ensure_ascii=False), *lines]) + "\n")
        rows = []
        n = 0

        def variant(name: str, kind: str, job: list[str]) -> None:
            nonlocal n
            n += 1
            load = os.getloadavg()[0]
            peak, wall, cpu, out = run_capped([kind, str(old), str(tmp / f"cache{n}"), *job], args.cap_gb)
            info = json.loads(out.strip().splitlines()[-1]) if job[0] != "evaluate" and peak > 0 else {}
            rows.append((name, peak, wall, cpu, load, info))
            print(f"  done: {name}: peak {peak:.0f} MB, {wall:.1f} s", flush=True)

        from xlt.modeling.packaged import checkpoint_dir

        # the untrained encoder with its seeded head, as the demo's before-fine-tuning pass scores it
        ev = ["evaluate", "+recipe=demo", "stages=[evaluate]", "eval.before_training=false",
              f"eval.model={checkpoint_dir()}"]
        for v in args.variants.split(","):
            if v == "plain":
                variant("evaluate, plain demo (no huge item), measures", "after",
                        [*ev, f"run_root={tmp / f'runs{n}'}"])
            elif v.startswith("eval-"):
                kind = v.removeprefix("eval-")
                variant(f"evaluate, {args.mb:g} MB item, measures: {kind}", kind,
                        [*ev, f"run_root={tmp / f'runs{n}'}", f"eval.benchmarks.belebele.path={bele}"])
            else:
                job, kind = v.split("-")
                size = f"{args.mmlu_questions} questions" if job == "mmlu" else f"{args.mb:g} MB item"
                variant(f"measures alone, {size}: {kind}", kind,
                        [job, str(args.mmlu_questions if job == "mmlu" else args.mb)])
    print(f"{'variant':<58} {'peak RSS MB':>11} {'wall s':>8} {'CPU s':>8} {'load':>5}  measures")
    for name, peak, wall, cpu, load, info in rows:
        shown = f"> {args.cap_gb * 1024:.0f} (killed)" if peak < 0 else f"{peak:.0f}"
        extra = (f"tokenizer loaded {info['loaded']:.0f} MB, counting {info['wall']:.1f} s wall "
                 f"{info['cpu']:.1f} s CPU, tokens {info['tokens']}, words {info['words']}" if info else "")
        print(f"{name:<58} {shown:>11} {wall:>8.1f} {cpu:>8.1f} {load:>5.1f}  {extra}")
    print(f"load average after: {os.getloadavg()}")


def run_capped(args: list[str], cap_gb: float, child: str = CHILD) -> tuple[float, float, float, str]:
    """(peak RSS MB, wall s, CPU s, stdout) of ``python -c child args`` in a fresh process (its
    ``ru_maxrss`` and CPU time from ``wait4``); peak -1 if its resident memory passed ``cap_gb`` and it was
    killed."""
    start = time.perf_counter()
    out = tempfile.TemporaryFile(mode="w+")
    err = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([sys.executable, "-c", child, *args], cwd=REPO, env=ENV, stdout=out, stderr=err)
    killed = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                rss_kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            rss_kb = 0
        if rss_kb > cap_gb * 1024 * 1024 and not killed:
            proc.kill()
            killed = True
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0 and not killed:
        err.seek(0)
        sys.exit(f"{args[:5]} failed ({proc.returncode}):\n{err.read()[-3000:]}")
    out.seek(0)
    cpu = usage.ru_utime + usage.ru_stime
    return (-1.0 if killed else usage.ru_maxrss / 1024), time.perf_counter() - start, cpu, out.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0, help="size of the pathological passage in MB")
    parser.add_argument("--measures", action="store_true", help="measure the tokenizer measures (issue 50)")
    parser.add_argument("--before-rev", default="main", help="the git revision whose measures are 'before'")
    parser.add_argument("--mmlu-questions", type=int, default=14042)
    parser.add_argument("--cap-gb", type=float, default=6.0, help="kill a variant past this resident memory")
    parser.add_argument("--variants", default="plain,eval-none,eval-before,eval-after,mmlu-before,mmlu-after,"
                        "huge-before,huge-after", help="comma-separated, of the default list")
    args = parser.parse_args()
    if args.measures:
        measures_main(args)
        return
    text = prose(args.mb)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        race = tmp / "race"
        shutil.copytree(ASSETS / "race", race)
        row = json.loads((race / "train.jsonl").read_text().splitlines()[0])
        row.update(example_id="huge.txt", article=text)
        with open(race / "train.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        bele = tmp / "belebele"
        shutil.copytree(ASSETS / "belebele", bele)
        eng = bele / "data" / "eng_Latn.jsonl"
        item = json.loads(eng.read_text().splitlines()[0])
        item.update(link="https://example.org/huge", question_number=1, flores_passage=text)
        with open(eng, "a", encoding="utf-8") as f:
            f.write(json.dumps(item, ensure_ascii=False) + "\n")

        common = ["stages=[build_data,train,evaluate]"]
        runs = {
            "plain demo": [*common, f"run_root={tmp / 'runs_plain'}"],
            f"{args.mb:g} MB train passage": [*common, f"run_root={tmp / 'runs_train'}", f"data.sources.race.path={race}"],
            f"{args.mb:g} MB eval passage": [*common, f"run_root={tmp / 'runs_eval'}", f"eval.benchmarks.belebele.path={bele}"],
        }
        results = {name: run(a) for name, a in runs.items()}
        report = next((tmp / "runs_train").rglob("build_report.json"))
        dropped = json.loads(report.read_text())["sources"]["race"]["splits"]["train"]["dropped"]
    base = results["plain demo"][0]
    print(f"{'run':<24} {'peak RSS MB':>12} {'x plain':>8} {'wall s':>8}")
    for name, (rss, wall) in results.items():
        print(f"{name:<24} {rss:>12.0f} {rss / base:>8.2f} {wall:>8.1f}")
    print(f"train passage in the build report: dropped {dropped}")


if __name__ == "__main__":
    main()
