# Shared by the xlt sbatch scripts (sourced, not run): the environment of offline compute nodes, and SLURM's
# hooks for the scheduler-neutral forwarder shell/forward.sh, which defines xlt_exec: it runs a command so that
# a job survives its time limit or preemption (docs/preemption.md says what each SLURM configuration gives, by
# version):
#
#   #SBATCH --signal=B:USR1@300   SLURM signals the batch shell 300 s before the limit; its trap writes the
#                                 preemption notice ($XLT_PREEMPTION_NOTICE) and stops the command: TERM to a
#                                 python command, USR2 to srun (never TERM: srun SIGKILLs its tasks on TERM;
#                                 it forwards USR2 to every process of its step through the nodes' slurmd, and
#                                 the multi-node script's task wrapper TERMs its launcher). It waits up to
#                                 XLT_GRACE seconds for the checkpoint.
#   sentinel step                 at a preemption with a GraceTime SLURM's first TERM goes to the job's steps
#                                 only, never to the batch step: while a single-node command runs, a waiting
#                                 step (srun --overlap) turns that TERM into a USR2 for this shell, which
#                                 stops the command as for the warning, at the grace's start.
#   TERM to the batch shell       SLURM signals every process of the job (the time limit without --signal, a
#                                 preemption without a grace, scancel): forwarded to a python command (srun
#                                 and its tasks got it themselves).
#
# xlt takes a TERM for a preemption only with the notice (or after a USR1); else rank 0 asks the scheduler
# once, after the checkpoint (xlt/cluster/slurm.py). Once the command has stopped, the forwarder hands what
# it saw to `python -m xlt.cluster after-stop` (xlt/cluster/requeue.py), which judges this stop by its own
# evidence and requeues the job, checked (exit status, then Restarts raised; retried within
# XLT_REQUEUE_WAIT_S), or not: scancel is never undone, SLURM's own requeue not doubled, a refused requeue
# (--no-requeue) or a silent controller ends the job failed (exit 75: afterok dependents are cancelled) with
# the checkpoint kept and "resubmit". A crash is never requeued. Requeues are capped in Python
# (XLT_MAX_REQUEUES, default 100: a translate-train-all run of the paper sweep, ~700 A100-h on one GPU, is ~60
# incarnations of the training array's 12 h); the shell exits with the status of Python's one verdict line.
#
# Knobs (environment variables): XLT_PYTHON (python executable), XLT_SETUP (a file sourced first:
# module load / conda activate), XLT_GRACE (seconds to wait after USR1, default 240), XLT_MAX_REQUEUES,
# XLT_DRY_RUN=1 (print the commands instead of running them), XLT_RECORD_DIR (a folder every node sees, for the
# preemption records and notices; default slurm-logs/ in the submission folder, $TMPDIR outside SLURM),
# XLT_REQUEUE_WAIT_S (how long to retry a requeue, default 20), XLT_SCHEDULER_TIMEOUT_S (one question to the
# controller, default 5), XLT_SENTINEL_STEP=0 (no sentinel step).
#
# Bash 4.2 (RHEL/CentOS 7): no feature of 4.3+ (namerefs, wait -n, negative subscripts, ${x@Q}), and arrays
# that may be empty are expanded as ${a[@]+"${a[@]}"} (4.2 calls "${a[@]}" of an empty array unbound under -u).

# shellcheck source=../shell/node.sh
source "$(dirname "${BASH_SOURCE[0]}")/../shell/node.sh"
XLT_GRACE="${XLT_GRACE:-240}"
# torch-elastic's agent gives its workers this long after forwarding TERM before it SIGKILLs them (default 30).
export TORCH_ELASTIC_SHUTDOWN_TIMEOUT="${TORCH_ELASTIC_SHUTDOWN_TIMEOUT:-$XLT_GRACE}"
# shellcheck source=../shell/forward.sh
source "$(dirname "${BASH_SOURCE[0]}")/../shell/forward.sh"
XLT_SRUN=0

xlt_job_id() { echo "${SLURM_JOB_ID:-local}"; }

# xlt_job_name: the job as a user finds it in squeue (array elements as ARRAYJOB_INDEX).
xlt_job_name() {
    if [[ -n "${SLURM_ARRAY_JOB_ID:-}" ]]; then echo "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
    else echo "${SLURM_JOB_ID:-local}"; fi
}

xlt_record_root() { echo "${SLURM_SUBMIT_DIR:+$SLURM_SUBMIT_DIR/slurm-logs}"; }

xlt_hook_launch() {
    if [[ -n "${SLURM_JOB_ID:-}" ]]; then
        # SLURM sets SLURM_RESTART_COUNT only from the first requeue on: the command gets 0 before, so that it
        # need not ask scontrol (it does when a step or container drops the variable).
        SLURM_RESTART_COUNT="${SLURM_RESTART_COUNT:-0}" "$@" &
    else
        "$@" &
    fi
}

xlt_hook_warn() {
    # The scheduler's warning (--signal=B:USR1@N), or USR2 from the sentinel step (a preemption's grace began).
    if [[ "$XLT_SRUN" == 1 ]]; then
        # Never TERM srun (it SIGKILLs its tasks): USR2, which srun forwards to the step's processes through the
        # nodes' slurmd (not the controller); the task wrapper turns it into a TERM for its launcher
        # (slurm/train_multinode.sbatch).
        xlt_log "$1: sending USR2 to srun (pid ${XLT_CHILD}), which forwards it to every task of the step" \
                "(checkpoint and stop on every node), then requeueing"
        [[ -n "$XLT_CHILD" ]] && kill -USR2 "$XLT_CHILD" 2>/dev/null
    else
        xlt_log "$1: sending TERM to pid ${XLT_CHILD} (checkpoint and stop), then requeueing"
        [[ -n "$XLT_CHILD" ]] && kill -TERM "$XLT_CHILD" 2>/dev/null
    fi
}

xlt_hook_term() {
    if [[ "$XLT_SRUN" == 1 ]]; then
        xlt_log "TERM: SLURM signals every process of the job (srun and its tasks too); nothing forwarded;" \
                "asking the scheduler why once srun has stopped"
    else
        xlt_log "TERM: forwarding to pid ${XLT_CHILD}; asking the scheduler why once it has stopped"
        [[ -n "$XLT_CHILD" ]] && kill -TERM "$XLT_CHILD" 2>/dev/null
    fi
}

# srun gets TERM (it forwards it and then KILLs its tasks); a python command KILL.
xlt_hook_grace_signal() { if [[ "$XLT_SRUN" == 1 ]]; then echo TERM; else echo KILL; fi; }

xlt_hook_start() {
    XLT_SRUN=0
    [[ "$(basename "$1")" == srun ]] && XLT_SRUN=1
    [[ "$XLT_SRUN" == 0 ]] && xlt_sentinel_start
    return 0
}

xlt_hook_stop() { xlt_sentinel_stop; }

# xlt_sentinel_start: a job step that only waits. At a preemption with a GraceTime, SLURM's first TERM goes to
# the job's steps, never to the batch step where a single-node command runs (SLURM 22.05-24.11:
# preempt.c _job_check_grace_internal -> job_signal -> KILL_STEPS_ONLY): the sentinel turns it into a USR2
# for this shell at the grace's start. A TERM to the whole job reaches this shell too: the sentinel waits 2 s
# first, and the shell ignores its USR2 after a TERM of its own.
xlt_sentinel_start() {
    XLT_SENTINEL=""
    [[ "${XLT_SENTINEL_STEP:-1}" == 1 && -n "${SLURM_JOB_ID:-}" && -n "${SLURMD_NODENAME:-}" ]] || return 0
    command -v srun >/dev/null 2>&1 || return 0
    srun --quiet --overlap --nodes=1 --ntasks=1 --job-name=xlt-sentinel --nodelist="$SLURMD_NODENAME" \
         --output=/dev/null --error=/dev/null \
         bash -c 'trap "sleep 2; kill -USR2 $0 2>/dev/null; exit 0" TERM; while :; do sleep 3600 & wait $!; done' "$$" \
         2>/dev/null &
    XLT_SENTINEL=$!
}

xlt_sentinel_stop() {
    [[ -n "${XLT_SENTINEL:-}" ]] || return 0
    # Our own waiting step: srun ends it. Not waited for: srun waits for the controller to confirm the step's
    # end, and a silent controller must not delay the verdict.
    kill -TERM "$XLT_SENTINEL" 2>/dev/null
    XLT_SENTINEL=""
}
