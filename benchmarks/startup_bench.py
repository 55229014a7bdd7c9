"""Benchmark: the CPU time of an entry point's process with xlt's garbage-collector thresholds (xlt/startup.py)
against CPython's defaults, the same work in fresh interpreters, alternated round by round.

Two shapes, each a process of its own as the CLI, a rank or a scheduler's job starts it:

* ``imports``: what a training rank imports before its first step (``xlt.cli``, the train, evaluate and report
  stages, transformers' ``Trainer``);
* ``demo``: ``python -m xlt.train +recipe=demo_tiny`` with 2 training steps: build, train, evaluate (Belebele,
  Global-MMLU and XCOPA samples) and report, what a short scheduler job or a test's run is.

The baseline sets CPython's default thresholds back right after ``xlt.startup`` is imported (the module applies its
own on import), so both sides run the same code otherwise. Prints the mean user+system CPU seconds of each side
and their ratio. Usage::

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python benchmarks/startup_bench.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = "import xlt.startup, gc; gc.set_threshold(700, 10, 10)"
TUNED = "import xlt.startup"
IMPORTS = "import xlt.cli, xlt.stages.train, xlt.stages.evaluate, xlt.stages.report; from transformers import Trainer"
DEMO = ("import sys; from xlt.train import main; sys.argv = ['xlt.train', '+recipe=demo_tiny', 'training.max_steps=2', "
        "'training.eval_steps=2', 'run_root={root}']; main()")


def cpu_seconds(code: str) -> float:
    """User + system CPU seconds of one fresh interpreter running ``code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1", "WANDB_MODE": "disabled"}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
          f"Python {sys.version.split()[0]}")
    for name, body in (("imports", IMPORTS), ("demo", DEMO)):
        times: dict[str, list[float]] = {"defaults": [], "xlt": []}
        for _ in range(args.rounds):
            for side, head in (("defaults", DEFAULTS), ("xlt", TUNED)):
                with tempfile.TemporaryDirectory() as root:
                    times[side].append(cpu_seconds(f"{head}; {body.format(root=root)}"))
        base, ours = statistics.mean(times["defaults"]), statistics.mean(times["xlt"])
        print(f"{name:8s} CPython defaults {base:6.2f} CPU-s (sd {statistics.stdev(times['defaults']):.2f}), "
              f"xlt {ours:6.2f} (sd {statistics.stdev(times['xlt']):.2f}): {base - ours:+.2f} CPU-s, "
              f"ratio {base / ours:.3f}x over {args.rounds} rounds")


if __name__ == "__main__":
    main()
