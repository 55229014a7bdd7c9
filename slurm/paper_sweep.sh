#!/bin/bash
# The paper reproduction on SLURM (sweeps/paper.txt: 5 encoders x {zero-shot, translate-train-all} x 3 seeds):
#
#   python -m xlt.prefetch --sweep sweeps/paper.txt         # first, on the login node (network)
#   slurm/paper_sweep.sh [-p PARTITION] [-A ACCOUNT] [-n TRANSLATE_SHARDS] [-j PARALLEL] [overrides...]
#
# 1. translation, once: build_data + a translation array (-n shards) for the first run with a translate stage,
#    filling the shared translation cache (XLT_TRANSLATION_CACHE, added as translate.cache_dir);
# 2. the training array over the sweep file (-j elements at a time), after 1: every run builds its data,
#    translates (cache hits), trains, evaluates on Belebele + Global-MMLU and writes its report;
# 3. the comparison report (mean +- std over seeds, paired tests against the first line) after 2:
#    <run_root>/paper_compare/compare.md
# Extra overrides (e.g. run_root=/scratch/me/runs) apply to every run.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SWEEP="${XLT_SWEEP:-$HERE/../sweeps/paper.txt}"
PYTHON="${XLT_PYTHON:-python}"
SHARDS=8
PARALLEL=8
OPTS=()
# shellcheck source=options.sh
source "$HERE/options.sh"
xlt_submit_options "n:j:p:A:" "usage: slurm/paper_sweep.sh [-p PARTITION] [-A ACCOUNT] [-n TRANSLATE_SHARDS] [-j PARALLEL] [overrides...]" "$@"
shift "$XLT_SHIFT"
EXTRA=("$@")
if [[ -n "${XLT_TRANSLATION_CACHE:-}" ]]; then
    EXTRA+=("translate.cache_dir=${XLT_TRANSLATION_CACHE}")
else
    echo "warning: XLT_TRANSLATION_CACHE is not set: every translate-train-all run translates on its own" >&2
fi
mkdir -p slurm-logs
N=$("$PYTHON" -m xlt.cluster count "$SWEEP")
ROOT="runs"
for o in ${EXTRA[@]+"${EXTRA[@]}"}; do [[ "$o" == run_root=* ]] && ROOT="${o#run_root=}"; done

# 1. translate once (the first line of the sweep whose run has a translate stage)
DEP=()
FIRST_TTA=""
for i in $(seq 1 "$N"); do
    mapfile -t LINE_ARGS < <("$PYTHON" -m xlt.cluster line "$SWEEP" "$i")
    # (captured first: under pipefail, grep -q ending the pipe early would fail it with SIGPIPE)
    STAGES="$("$PYTHON" -m xlt.cluster stages ${LINE_ARGS[@]+"${LINE_ARGS[@]}"} ${EXTRA[@]+"${EXTRA[@]}"})"
    if grep -qx translate <<<"$STAGES"; then FIRST_TTA=$i; break; fi
done
if [[ -n "$FIRST_TTA" && "$SHARDS" -gt 0 ]]; then
    mapfile -t TTA_ARGS < <("$PYTHON" -m xlt.cluster line "$SWEEP" "$FIRST_TTA")
    DATA_JOB=$(sbatch --parsable ${OPTS[@]+"${OPTS[@]}"} --job-name=xlt-build-data "$HERE/stage.sbatch" build_data ${TTA_ARGS[@]+"${TTA_ARGS[@]}"} ${EXTRA[@]+"${EXTRA[@]}"})
    TR_JOB=$(sbatch --parsable ${OPTS[@]+"${OPTS[@]}"} --kill-on-invalid-dep=yes --dependency="afterok:${DATA_JOB%%;*}" --array="0-$((SHARDS - 1))" \
        "$HERE/translate_array.sbatch" ${TTA_ARGS[@]+"${TTA_ARGS[@]}"} ${EXTRA[@]+"${EXTRA[@]}"})
    DEP=(--kill-on-invalid-dep=yes --dependency="afterok:${TR_JOB%%;*}")
    echo "translation: build_data ${DATA_JOB%%;*}, array ${TR_JOB%%;*} (${SHARDS} shards)"
fi

# 2. every run of the sweep
TRAIN_JOB=$(sbatch --parsable ${OPTS[@]+"${OPTS[@]}"} ${DEP[@]+"${DEP[@]}"} --array="1-${N}%${PARALLEL}" \
    "$HERE/train_array.sbatch" "$SWEEP" ${EXTRA[@]+"${EXTRA[@]}"})
echo "training array: ${TRAIN_JOB%%;*} (${N} runs, ${PARALLEL} at a time)"

# 3. comparison
mapfile -t DIRS < <("$PYTHON" -m xlt.cluster rundirs "$SWEEP" ${EXTRA[@]+"${EXTRA[@]}"})
CMP_JOB=$(sbatch --parsable ${OPTS[@]+"${OPTS[@]}"} --kill-on-invalid-dep=yes --dependency="afterok:${TRAIN_JOB%%;*}" --job-name=xlt-compare \
    "$HERE/stage.sbatch" compare ${DIRS[@]+"${DIRS[@]}"} --out "${ROOT}/paper_compare")
echo "comparison: ${CMP_JOB%%;*} -> ${ROOT}/paper_compare/compare.md"
