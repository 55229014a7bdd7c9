# Shared by the xlt Grid Engine job scripts (sourced, not run): the environment of offline compute nodes
# (shell/node.sh) and Grid Engine's hooks for the scheduler-neutral forwarder shell/forward.sh, which defines
# xlt_exec (docs/schedulers.md; measured on Son of Grid Engine 8.1.9, tests/cluster/test_real_gridengine.py):
#
#   -l s_rt=T           Grid Engine sends USR1 to every process of the job at T (the command gets it too):
#                       the trap writes the preemption notice, sends TERM to the command and waits up to
#                       XLT_GRACE seconds for its checkpoint. Ask for h_rt above s_rt by more than XLT_GRACE.
#   exit 99             Python's verdict for a requeue: the job script exits 99 and Grid Engine runs the job
#                       again, which resumes from the checkpoint (its finished stages are skipped).
#   the requeue count   RESTARTED is only 0/1: Python keeps the count in $XLT_RECORD_DIR/.xlt-requeues-JOB[.TASK]
#                       and applies the one cap (XLT_MAX_REQUEUES).
#   a rerun's s_rt      8.1.9 kills a rerun at its first s_rt, without a warning: ask for an s_rt that leaves each
#                       incarnation room for its work.
#   qdel, h_rt          SIGKILL (with -notify: USR2 first, a preemption's warning here): no checkpoint after it.
#
# Knobs: those of shell/forward.sh (XLT_PYTHON, XLT_GRACE, XLT_DRY_RUN, XLT_RECORD_DIR: default sge-logs/ in the
# submission folder) and XLT_SETUP (shell/node.sh).

# shellcheck source=../shell/node.sh
source "$(dirname "${BASH_SOURCE[0]}")/../shell/node.sh"
# shellcheck source=../shell/forward.sh
source "$(dirname "${BASH_SOURCE[0]}")/../shell/forward.sh"
# Python tells Grid Engine from JOB_ID and SGE_TASK_ID too; said here for a job outside an array without SGE_ROOT.
export XLT_SCHEDULER=gridengine

# xlt_job_id / xlt_job_name: the job as qstat and qacct name it (an array task as JOB.TASK).
xlt_job_id() {
    if [[ -z "${JOB_ID:-}" ]]; then echo local
    elif [[ "${SGE_TASK_ID:-undefined}" =~ ^[0-9]+$ ]]; then echo "${JOB_ID}.${SGE_TASK_ID}"
    else echo "$JOB_ID"; fi
}
xlt_job_name() { xlt_job_id; }

xlt_record_root() { echo "${SGE_O_WORKDIR:+$SGE_O_WORKDIR/sge-logs}"; }
