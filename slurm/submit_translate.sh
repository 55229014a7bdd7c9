#!/bin/bash
# A translate-train-all run on SLURM, chained: build_data (CPU job) -> translation array (GPU, sharded)
# -> the rest of the run (merge translations, train, evaluate, report) as one GPU job.
#
#   slurm/submit_translate.sh [-n SHARDS] [-p PARTITION] [-A ACCOUNT] +recipe=xlmr_translate_train_all [overrides...]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SHARDS=8
OPTS=()
# shellcheck source=options.sh
source "$HERE/options.sh"
xlt_submit_options "n:p:A:" "usage: slurm/submit_translate.sh [-n SHARDS] [-p PARTITION] [-A ACCOUNT] +recipe=NAME [overrides...]" "$@"
shift "$XLT_SHIFT"
if [[ $# -lt 1 || "$SHARDS" -lt 1 ]]; then
    echo "usage: slurm/submit_translate.sh [-n SHARDS] [-p PARTITION] [-A ACCOUNT] +recipe=NAME [overrides...]" >&2
    exit 2
fi
mkdir -p slurm-logs
DATA_JOB=$(sbatch --parsable ${OPTS[@]+"${OPTS[@]}"} --job-name=xlt-build-data "$HERE/stage.sbatch" build_data "$@")
DATA_JOB="${DATA_JOB%%;*}"
TR_JOB=$(sbatch --parsable ${OPTS[@]+"${OPTS[@]}"} --kill-on-invalid-dep=yes --dependency="afterok:${DATA_JOB}" --array="0-$((SHARDS - 1))" \
    "$HERE/translate_array.sbatch" "$@")
TR_JOB="${TR_JOB%%;*}"
RUN_JOB=$(sbatch --parsable ${OPTS[@]+"${OPTS[@]}"} --kill-on-invalid-dep=yes --dependency="afterok:${TR_JOB}" --job-name=xlt-train \
    --gpus-per-node=1 --time=24:00:00 "$HERE/stage.sbatch" train "$@")
RUN_JOB="${RUN_JOB%%;*}"
echo "build_data: ${DATA_JOB}; translation array: ${TR_JOB} (${SHARDS} shards); train+evaluate+report: ${RUN_JOB}"
