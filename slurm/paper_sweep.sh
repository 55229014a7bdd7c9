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
#    <run_root>/<sweep name>_compare/compare.md (paper_compare for sweeps/paper.txt; the run root the runs
#    resolve to: python -m xlt.cluster plan)
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
# The whole sweep resolved once (python -m xlt.cluster plan): its runs, their directories, the first run with a
# translate stage, the comparison's folder (below the run root the runs resolve to).
PLAN="$("$PYTHON" -m xlt.cluster plan "$SWEEP" --shell ${EXTRA[@]+"${EXTRA[@]}"})"
eval "$PLAN"
N="$PLAN_COUNT"

# 1. translate once (the first line of the sweep whose run has a translate stage)
DEP=()
FIRST_TTA="$PLAN_FIRST_TRANSLATE"
if [[ -n "$FIRST_TTA" && "$SHARDS" -gt 0 ]]; then
    TTA_ARGS=(${PLAN_TRANSLATE_ARGS[@]+"${PLAN_TRANSLATE_ARGS[@]}"})
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
CMP_JOB=$(sbatch --parsable ${OPTS[@]+"${OPTS[@]}"} --kill-on-invalid-dep=yes --dependency="afterok:${TRAIN_JOB%%;*}" --job-name=xlt-compare \
    "$HERE/stage.sbatch" compare ${PLAN_DIRS[@]+"${PLAN_DIRS[@]}"} --out "$PLAN_COMPARE_ROOT")
echo "comparison: ${CMP_JOB%%;*} -> $PLAN_COMPARE_ROOT/compare.md"
