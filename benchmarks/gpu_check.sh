#!/usr/bin/env bash
# The GPU checks in one command: every test marked `gpu` (tests/test_gpu.py: bf16 against fp32 training,
# DeepSpeed ZeRO-2/3 on one GPU, the LLM scorer's cascade attention and prefix cache, padding to multiples
# of 8, CTranslate2 in fp16/bf16/int8, the adaptive batcher on a real out-of-memory), then
# benchmarks/gpu_bench.py (throughput, memory and MFU of the real architectures' shapes), then one summary
# table. Without a CUDA device the tests report "skipped" and the benchmark runs its tiny CPU smoke shapes:
# that proves the script, not the GPU paths.
#
#   bash benchmarks/gpu_check.sh [OUT]      # OUT (default gpu_check/): gpu_tests.xml, gpu_bench.json, summary.md
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu_check}
mkdir -p "$out"
export HF_HUB_OFFLINE=1 WANDB_MODE=disabled TQDM_DISABLE=1 TOKENIZERS_PARALLELISM=false
start=$SECONDS

python -m pytest -q -m gpu -rs -p no:cacheprovider --junitxml="$out/gpu_tests.xml" tests/test_gpu.py
tests_rc=$?
tests_s=$((SECONDS - start))

if python -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  bench=(--steps 10)
else
  echo "gpu_check: no CUDA device: gpu_bench.py runs its tiny CPU shapes (a smoke run of the script)"
  bench=(--tiny)
fi
python benchmarks/gpu_bench.py "${bench[@]}" --json "$out/gpu_bench.json"
bench_rc=$?

python - "$out" "$tests_s" "$((SECONDS - start))" <<'PY'
"""One summary table of the GPU checks (tests: outcome, seconds, what each measured) and the benchmark."""
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

out, tests_s, total_s = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
lines = ["| check | outcome | s | measured |", "|---|---|---:|---|"]
xml = out / "gpu_tests.xml"
for case in (ET.parse(xml).getroot().iter("testcase") if xml.exists() else []):
    outcome = "passed"
    for tag in ("failure", "error", "skipped"):
        el = case.find(tag)
        if el is not None:
            outcome = tag if tag != "skipped" else f"skipped: {el.get('message', '')}"
    measured = "; ".join(p.get("value", "") for p in case.iter("property") if p.get("name") == "measured")
    lines.append(f"| {case.get('name')} | {outcome} | {float(case.get('time', 0)):.1f} | {measured} |")
bench = out / "gpu_bench.json"
if bench.exists():
    data = json.loads(bench.read_text())
    lines += ["", f"gpu_bench.py on {data.get('device', '?')}:", "",
              "| model | phase | real tok/s | processed tok/s | peak GB | MFU |", "|---|---|---:|---:|---:|---:|"]
    for r in data["results"]:
        mem = "-" if r.get("peak_memory_gb") is None else f"{r['peak_memory_gb']:.1f}"
        mfu = "-" if r.get("mfu") is None else f"{100 * r['mfu']:.1f}%"
        lines.append(f"| {r['model']} | {r['phase']} | {r['real_tokens_per_s']:.0f} | {r['processed_tokens_per_s']:.0f} | "
                     f"{mem} | {mfu} |")
lines += ["", f"tests {tests_s} s, total {total_s} s"]
(out / "summary.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY
# pytest's 5 (every test deselected) is no failure here; anything else is.
[ "$tests_rc" -eq 0 ] || [ "$tests_rc" -eq 5 ] || exit "$tests_rc"
exit "$bench_rc"
