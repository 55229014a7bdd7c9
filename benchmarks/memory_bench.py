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
"""

from __future__ import annotations

import argparse
import json
import os
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0, help="size of the pathological passage in MB")
    args = parser.parse_args()
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
