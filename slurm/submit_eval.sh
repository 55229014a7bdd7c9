#!/bin/bash
# Evaluate one trained run as a SLURM array sharded by language, then merge with a dependent report job.
#
#   slurm/submit_eval.sh [-n SHARDS] [-p PARTITION] [-A ACCOUNT] +recipe=NAME [overrides...]
#
# Prints the two job ids. The report job runs only if every shard succeeded (afterok); if one failed, SLURM
# cancels the report job (--kill-on-invalid-dep=yes: no job of the chain is left pending for ever), the failing
# shard's log names it and its error, and `xlt status` shows it: resubmit (finished languages are skipped).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SHARDS=8
OPTS=()
# shellcheck source=options.sh
source "$HERE/options.sh"
xlt_submit_options "n:p:A:" "usage: slurm/submit_eval.sh [-n SHARDS] [-p PARTITION] [-A ACCOUNT] +recipe=NAME [overrides...]" "$@"
shift "$XLT_SHIFT"
if [[ $# -lt 1 || "$SHARDS" -lt 1 ]]; then
    echo "usage: slurm/submit_eval.sh [-n SHARDS] [-p PARTITION] [-A ACCOUNT] +recipe=NAME [overrides...]" >&2
    exit 2
fi
mkdir -p slurm-logs
EVAL_JOB=$(sbatch --parsable ${OPTS[@]+"${OPTS[@]}"} --array="0-$((SHARDS - 1))" "$HERE/eval_array.sbatch" "$@")
EVAL_JOB="${EVAL_JOB%%;*}"
REPORT_JOB=$(sbatch --parsable ${OPTS[@]+"${OPTS[@]}"} --kill-on-invalid-dep=yes --dependency="afterok:${EVAL_JOB}" --job-name=xlt-report \
    "$HERE/stage.sbatch" report "$@")
REPORT_JOB="${REPORT_JOB%%;*}"
echo "evaluation array: ${EVAL_JOB} (${SHARDS} shards); report: ${REPORT_JOB} (after the array succeeds)"
