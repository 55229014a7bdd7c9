#!/bin/bash
# Training array over a sweep file on Grid Engine: task N runs line N (1-based) of the file, all stages of its
# recipe (build_data, [translate,] train, evaluate, report), in the run's own deterministic directory; at most
# K tasks at once (-tc K), like slurm/train_array.sbatch's --array=1-N%K.
#
#   mkdir -p sge-logs
#   qsub -t 1-$(python -m xlt.cluster count sweeps/paper.txt) -tc 8 -l h_rt=12:00:00,s_rt=11:55:00 \
#        gridengine/train_array.sh sweeps/paper.txt [extra overrides applied to every run]
#
# At s_rt Grid Engine warns with USR1: the run checkpoints, the job script exits 99 and Grid Engine runs the task
# again, which skips its finished stages and resumes training from the last checkpoint (gridengine/common.sh).
# Prefetch first on the login node: python -m xlt.prefetch --sweep sweeps/paper.txt
#$ -N xlt-train
#$ -S /bin/bash
#$ -cwd
#$ -V
#$ -j y
#$ -o sge-logs/
#$ -r y
#$ -l h_rt=12:00:00,s_rt=11:55:00

# The repository (Grid Engine runs a copy of this script from its spool folder): XLT_HOME, else the submission
# folder, else the checkout of the xlt package XLT_PYTHON imports (an editable install).
if [[ -z "${XLT_HOME:-}" ]]; then
    XLT_HOME="${SGE_O_WORKDIR:-$PWD}"
    [[ -f "$XLT_HOME/gridengine/common.sh" ]] || XLT_HOME="$("${XLT_PYTHON:-python}" -c 'import os, xlt; print(os.path.dirname(os.path.dirname(os.path.abspath(xlt.__file__))))' 2>/dev/null)"
fi
if [[ ! -f "$XLT_HOME/gridengine/common.sh" ]]; then
    echo "xlt: error: gridengine/common.sh not found (XLT_HOME=${XLT_HOME}, submitted from ${SGE_O_WORKDIR:-?}): set XLT_HOME to the xlt checkout, submit from it, or install xlt (pip install -e) for XLT_PYTHON" >&2
    exit 2
fi
export XLT_HOME
source "$XLT_HOME/gridengine/common.sh"

if [[ $# -lt 1 || ! "${SGE_TASK_ID:-undefined}" =~ ^[0-9]+$ ]]; then
    echo "usage: qsub -t 1-N [-tc K] gridengine/train_array.sh SWEEP_FILE [overrides...]" >&2
    exit 2
fi
SWEEP="$1"; shift
xlt_sweep_args "$SWEEP" "$SGE_TASK_ID" || exit 2
xlt_exec "$XLT_PYTHON" -m xlt.train ${XLT_ARGS[@]+"${XLT_ARGS[@]}"} "$@"
