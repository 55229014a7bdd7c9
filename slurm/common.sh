# Shared by the xlt sbatch scripts (sourced, not run). Sets the environment of offline compute nodes and
# defines xlt_exec, which runs a command so that a job survives its time limit or preemption (docs/preemption.md
# says what each SLURM configuration gives, by version):
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
# once, after the checkpoint (xlt/cluster/scheduler.py). Once the command has stopped, the shell hands what
# it saw to `python -m xlt.cluster after-stop` (xlt/cluster/requeue.py), which judges this stop by its own
# evidence and requeues the job, checked (exit status, then Restarts raised; retried within
# XLT_REQUEUE_WAIT_S), or not: scancel is never undone, SLURM's own requeue not doubled, a refused requeue
# (--no-requeue) or a silent controller ends the job failed (exit 75: afterok dependents are cancelled) with
# the checkpoint kept and "resubmit". A crash is never requeued. Requeues are capped (XLT_MAX_REQUEUES).
#
# Knobs (environment variables): XLT_PYTHON (python executable), XLT_SETUP (a file sourced first:
# module load / conda activate), XLT_GRACE (seconds to wait after USR1, default 240), XLT_MAX_REQUEUES
# (default 100: a translate-train-all run of the paper sweep, ~700 A100-h on one GPU, is ~60 incarnations of
# the training array's 12 h), XLT_DRY_RUN=1 (print the commands instead of running them), XLT_RECORD_DIR (a folder every
# node sees, for the preemption records and notices; default slurm-logs/ in the submission folder, $TMPDIR
# outside SLURM), XLT_REQUEUE_WAIT_S (how long to retry a requeue, default 20), XLT_SCHEDULER_TIMEOUT_S (one
# question to the controller, default 5), XLT_SENTINEL_STEP=0 (no sentinel step).
#
# Bash 4.2 (RHEL/CentOS 7): no feature of 4.3+ (namerefs, wait -n, negative subscripts, ${x@Q}), and arrays
# that may be empty are expanded as ${a[@]+"${a[@]}"} (4.2 calls "${a[@]}" of an empty array unbound under -u).

set -uo pipefail

if [[ -n "${XLT_SETUP:-}" ]]; then
    # Activation scripts (conda, environment modules) read unset variables: not under set -u.
    set +u
    # shellcheck disable=SC1090
    source "$XLT_SETUP" || { echo "xlt: error: XLT_SETUP=$XLT_SETUP failed (status $?)" >&2; exit 2; }
    set -u
fi
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
export HF_DATASETS_OFFLINE="${HF_DATASETS_OFFLINE:-$HF_HUB_OFFLINE}"
export TRANSFORMERS_OFFLINE="${TRANSFORMERS_OFFLINE:-$HF_HUB_OFFLINE}"
export TOKENIZERS_PARALLELISM="${TOKENIZERS_PARALLELISM:-false}"
XLT_PYTHON="${XLT_PYTHON:-python}"
XLT_GRACE="${XLT_GRACE:-240}"
XLT_MAX_REQUEUES="${XLT_MAX_REQUEUES:-100}"
export XLT_MAX_REQUEUES  # the same cap for a job that Python requeues itself (submitit)
# torch-elastic's agent gives its workers this long after forwarding TERM before it SIGKILLs them (default 30).
export TORCH_ELASTIC_SHUTDOWN_TIMEOUT="${TORCH_ELASTIC_SHUTDOWN_TIMEOUT:-$XLT_GRACE}"
XLT_REQUEUE_EXIT=75
XLT_CHILD=""
XLT_REQUEUE=0
XLT_USR1=0
XLT_TERMINATED=0
XLT_SIGNAL_TIME=""
XLT_SRUN=0

xlt_log() { echo "[xlt $(date '+%F %T')] $*" >&2; }

xlt_on_usr1() {
    # The scheduler's warning (--signal=B:USR1@N), or USR2 from the sentinel step (a preemption's grace began).
    [[ "$XLT_TERMINATED" == 1 ]] && return  # the TERM to the whole job came first: that stop decides
    [[ "$XLT_USR1" == 1 ]] && return
    XLT_USR1=1
    XLT_SIGNAL_TIME="$(date +%s)"
    # First the notice (the workers take the TERM that follows for a preemption), then the signal.
    [[ -n "${XLT_PREEMPTION_NOTICE:-}" ]] && echo "USR1 $XLT_SIGNAL_TIME job ${SLURM_JOB_ID:-local}" > "$XLT_PREEMPTION_NOTICE"
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

xlt_on_term() {
    XLT_TERMINATED=1
    [[ -n "$XLT_SIGNAL_TIME" ]] || XLT_SIGNAL_TIME="$(date +%s)"
    if [[ "$XLT_SRUN" == 1 ]]; then
        xlt_log "TERM: SLURM signals every process of the job (srun and its tasks too); nothing forwarded;" \
                "asking the scheduler why once srun has stopped"
    else
        xlt_log "TERM: forwarding to pid ${XLT_CHILD}; asking the scheduler why once it has stopped"
        [[ -n "$XLT_CHILD" ]] && kill -TERM "$XLT_CHILD" 2>/dev/null
    fi
}

# xlt_job_name: the job as a user finds it in squeue (array elements as ARRAYJOB_INDEX).
xlt_job_name() {
    if [[ -n "${SLURM_ARRAY_JOB_ID:-}" ]]; then echo "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
    else echo "${SLURM_JOB_ID:-local}"; fi
}

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

# xlt_exec CMD [ARGS...]: run CMD with signal forwarding and requeue (see above); returns its status.
xlt_exec() {
    xlt_log "running: $*"
    if [[ "${XLT_DRY_RUN:-0}" == 1 ]]; then
        printf 'XLT_CMD'; printf ' %q' "$@"; printf '\n'
        return 0
    fi
    local record_dir="${XLT_RECORD_DIR:-${SLURM_SUBMIT_DIR:+$SLURM_SUBMIT_DIR/slurm-logs}}"
    record_dir="${record_dir:-${TMPDIR:-/tmp}}"
    mkdir -p "$record_dir"
    local tag="${SLURM_JOB_ID:-local}-${SLURM_RESTART_COUNT:-0}-$$-${RANDOM}"
    export XLT_PREEMPTION_RECORD="$record_dir/.xlt-preempted-${tag}.json"
    export XLT_PREEMPTION_NOTICE="$record_dir/.xlt-notice-${tag}"
    rm -f "$XLT_PREEMPTION_RECORD" "$XLT_PREEMPTION_NOTICE"
    XLT_USR1=0 XLT_TERMINATED=0 XLT_SIGNAL_TIME="" XLT_SRUN=0 XLT_REQUEUE=0
    [[ "$(basename "$1")" == srun ]] && XLT_SRUN=1
    [[ "$XLT_SRUN" == 0 ]] && xlt_sentinel_start
    if [[ -n "${SLURM_JOB_ID:-}" ]]; then
        # SLURM sets SLURM_RESTART_COUNT only from the first requeue on: the command gets 0 before, so that it
        # need not ask scontrol (it does when a step or container drops the variable).
        SLURM_RESTART_COUNT="${SLURM_RESTART_COUNT:-0}" "$@" &
    else
        "$@" &
    fi
    XLT_CHILD=$!
    trap 'xlt_on_usr1 "USR1 from the scheduler (its warning before the time limit, or a preemption'"'"'s user signal)"' USR1
    trap 'xlt_on_usr1 "USR2 from the sentinel step: a preemption'"'"'s grace time began"' USR2
    trap xlt_on_term TERM
    local rc waited=0
    wait "$XLT_CHILD"; rc=$?
    # `wait` returns early (status > 128) when a trapped signal arrives: keep waiting for the child,
    # at most XLT_GRACE seconds after a USR1.
    while kill -0 "$XLT_CHILD" 2>/dev/null; do
        if [[ "$XLT_USR1" == 1 ]] && (( waited >= XLT_GRACE )); then
            xlt_log "pid ${XLT_CHILD} still running after ${XLT_GRACE}s; stopping it and requeueing anyway"
            kill "-$([[ "$XLT_SRUN" == 1 ]] && echo TERM || echo KILL)" "$XLT_CHILD" 2>/dev/null
            break
        fi
        sleep 1 & wait $! 2>/dev/null
        waited=$((waited + 1))
    done
    if ! kill -0 "$XLT_CHILD" 2>/dev/null; then
        wait "$XLT_CHILD" 2>/dev/null; rc=$?
    fi
    trap - USR1 USR2 TERM
    xlt_sentinel_stop
    rm -f "$XLT_PREEMPTION_NOTICE"
    if [[ "$XLT_USR1" == 0 && "$XLT_TERMINATED" == 0 && ! -f "$XLT_PREEMPTION_RECORD" && "$rc" != "$XLT_REQUEUE_EXIT" ]]; then
        [[ "$rc" != 0 ]] && xlt_log "job $(xlt_job_name) failed (exit status $rc) and no preemption was sent to it:" \
                                    "not requeued; the error is above"
        return "$rc"
    fi
    # A stop: Python judges it by this stop's evidence and requeues (checked) or not (xlt/cluster/requeue.py).
    # SLURM TERMs the batch shell once the requeue is accepted: the verdict and its log line outlive that
    # (KillWait later SIGKILL ends them).
    trap '' TERM USR1 USR2
    local action
    action="$(SLURM_RESTART_COUNT="${SLURM_RESTART_COUNT:-0}" "$XLT_PYTHON" -m xlt.cluster after-stop "$rc" \
              "$XLT_USR1" "$XLT_TERMINATED" "${XLT_SIGNAL_TIME:-0}" "$XLT_PREEMPTION_RECORD" \
              "$record_dir/.xlt-requeues-${SLURM_JOB_ID:-local}")"
    rc=$?
    trap - TERM USR1 USR2
    rm -f "$XLT_PREEMPTION_RECORD"
    case "$action" in
        requeued|requeued-by-slurm) XLT_REQUEUE=1 ;;
        done|failed) ;;
        *) xlt_log "python -m xlt.cluster after-stop gave no verdict (status $rc): not requeued; the checkpoint" \
                   "is kept: resubmit the job to resume"
           (( rc == 0 )) && rc=1 ;;
    esac
    return "$rc"
}

# xlt_sweep_args FILE N: fills the array XLT_ARGS with run N (1-based) of a sweep file.
xlt_sweep_args() {
    local out
    out="$("$XLT_PYTHON" -m xlt.cluster line "$1" "$2")" || return 2
    mapfile -t XLT_ARGS <<<"$out"
}
