# The scheduler-neutral half of xlt's batch shells (sourced, not run): slurm/common.sh and gridengine/common.sh
# source it after setting their hooks. It runs a command so that a job survives its time limit or preemption:
# it forwards the scheduler's signals to the command, waits for its checkpoint, then asks Python for the
# verdict and exits with it. Python decides (python -m xlt.cluster after-stop, xlt/cluster/requeue.py: whether
# to requeue, the one cap XLT_MAX_REQUEUES, the checked requeue); the shell reads ONE line, "ACTION STATUS",
# and returns STATUS.
#
#   USR1 (the warning)   the scheduler's warning before the time limit (SLURM --signal=B:USR1@N, Grid Engine
#                        -l s_rt) or a preemption's: write the preemption notice ($XLT_PREEMPTION_NOTICE), then
#                        the scheduler's hook stops the command (xlt_hook_warn); wait up to XLT_GRACE seconds.
#   USR2                 the same, from a helper of the scheduler (SLURM's sentinel step: a preemption's grace).
#   TERM                 the scheduler (or a user) signals the job: the hook forwards it (xlt_hook_term).
#
# Hooks a scheduler's common.sh defines (defaults below):
#   xlt_job_id              the job's id for file names ("local" outside a job)
#   xlt_job_name            the job as a user finds it in the scheduler's queue
#   xlt_record_root         where the records go by default (a folder every node sees), empty: $TMPDIR
#   xlt_hook_launch CMD...  start CMD in the background (with the variables the scheduler owes it)
#   xlt_hook_warn WHY       stop the command after a warning (default: TERM to it)
#   xlt_hook_term           after a TERM to this shell (default: forward it to the command)
#   xlt_hook_grace_signal   what ends a command still running after XLT_GRACE (default: KILL)
#   xlt_hook_start/xlt_hook_stop   around the command (SLURM's sentinel step)
#
# Knobs: XLT_PYTHON (python executable), XLT_GRACE (seconds to wait after USR1, default 240), XLT_DRY_RUN=1
# (print the commands instead of running them), XLT_RECORD_DIR (a folder every node sees, for the preemption
# records, notices and the requeue count). XLT_MAX_REQUEUES, XLT_REQUEUE_WAIT_S, XLT_SCHEDULER_TIMEOUT_S are
# read by Python only.
#
# Bash 4.2 (RHEL/CentOS 7): no feature of 4.3+ (namerefs, wait -n, negative subscripts, ${x@Q}), and arrays
# that may be empty are expanded as ${a[@]+"${a[@]}"} (4.2 calls "${a[@]}" of an empty array unbound under -u).

XLT_PYTHON="${XLT_PYTHON:-python}"
XLT_GRACE="${XLT_GRACE:-240}"
XLT_CHILD=""
XLT_REQUEUE=0
XLT_USR1=0
XLT_TERMINATED=0
XLT_SIGNAL_TIME=""

xlt_log() { echo "[xlt $(date '+%F %T')] $*" >&2; }

# Default hooks (a scheduler's common.sh redefines those it needs after sourcing this file).
xlt_job_id() { echo local; }
xlt_job_name() { xlt_job_id; }
xlt_record_root() { echo ""; }
xlt_hook_launch() { "$@" & }
xlt_hook_warn() {
    xlt_log "$1: sending TERM to pid ${XLT_CHILD} (checkpoint and stop), then requeueing"
    [[ -n "$XLT_CHILD" ]] && kill -TERM "$XLT_CHILD" 2>/dev/null
}
xlt_hook_term() {
    xlt_log "TERM: forwarding to pid ${XLT_CHILD}; asking the scheduler why once it has stopped"
    [[ -n "$XLT_CHILD" ]] && kill -TERM "$XLT_CHILD" 2>/dev/null
}
xlt_hook_grace_signal() { echo KILL; }
xlt_hook_start() { :; }
xlt_hook_stop() { :; }

xlt_on_usr1() {
    [[ "$XLT_TERMINATED" == 1 ]] && return  # the TERM to the whole job came first: that stop decides
    [[ "$XLT_USR1" == 1 ]] && return
    XLT_USR1=1
    XLT_SIGNAL_TIME="$(date +%s)"
    # First the notice (the workers take the TERM that follows for a preemption), then the signal.
    [[ -n "${XLT_PREEMPTION_NOTICE:-}" ]] && echo "USR1 $XLT_SIGNAL_TIME job $(xlt_job_name)" > "$XLT_PREEMPTION_NOTICE"
    xlt_hook_warn "$1"
}

xlt_on_term() {
    XLT_TERMINATED=1
    [[ -n "$XLT_SIGNAL_TIME" ]] || XLT_SIGNAL_TIME="$(date +%s)"
    xlt_hook_term
}

# xlt_exec CMD [ARGS...]: run CMD with signal forwarding and Python's verdict (see above); returns its status.
xlt_exec() {
    xlt_log "running: $*"
    if [[ "${XLT_DRY_RUN:-0}" == 1 ]]; then
        printf 'XLT_CMD'; printf ' %q' "$@"; printf '\n'
        return 0
    fi
    local record_dir="${XLT_RECORD_DIR:-$(xlt_record_root)}"
    record_dir="${record_dir:-${TMPDIR:-/tmp}}"
    mkdir -p "$record_dir"
    local job; job="$(xlt_job_id)"
    local tag="${job}-$$-${RANDOM}"
    export XLT_PREEMPTION_RECORD="$record_dir/.xlt-preempted-${tag}.json"
    export XLT_PREEMPTION_NOTICE="$record_dir/.xlt-notice-${tag}"
    # The job's requeue count (Python reads and writes it; the shell only names it).
    export XLT_REQUEUE_COUNTER="$record_dir/.xlt-requeues-${job}"
    rm -f "$XLT_PREEMPTION_RECORD" "$XLT_PREEMPTION_NOTICE"
    XLT_USR1=0 XLT_TERMINATED=0 XLT_SIGNAL_TIME="" XLT_REQUEUE=0
    xlt_hook_start "$@"
    xlt_hook_launch "$@"
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
            kill "-$(xlt_hook_grace_signal)" "$XLT_CHILD" 2>/dev/null
            break
        fi
        sleep 1 & wait $! 2>/dev/null
        waited=$((waited + 1))
    done
    if ! kill -0 "$XLT_CHILD" 2>/dev/null; then
        wait "$XLT_CHILD" 2>/dev/null; rc=$?
    fi
    trap - USR1 USR2 TERM
    xlt_hook_stop
    rm -f "$XLT_PREEMPTION_NOTICE"
    # Python judges this stop by its evidence (xlt/cluster/requeue.py) and prints one line, "ACTION STATUS".
    # SLURM TERMs the batch shell once a requeue is accepted: the verdict and its log line outlive that
    # (KillWait later SIGKILL ends them).
    trap '' TERM USR1 USR2
    local verdict action status
    verdict="$("$XLT_PYTHON" -m xlt.cluster after-stop "$rc" "$XLT_USR1" "$XLT_TERMINATED" "${XLT_SIGNAL_TIME:-0}" \
               "$XLT_PREEMPTION_RECORD" "$XLT_REQUEUE_COUNTER")"
    local asked=$?
    trap - TERM USR1 USR2
    rm -f "$XLT_PREEMPTION_RECORD"
    read -r action status <<<"$verdict"
    case "$action" in
        requeued|requeued-by-slurm) XLT_REQUEUE=1 ;;
        done|failed) ;;
        *) action="" ;;
    esac
    if [[ -z "$action" || ! "$status" =~ ^[0-9]+$ ]]; then
        xlt_log "python -m xlt.cluster after-stop gave no verdict (status $asked, said '${verdict}'): not" \
                "requeued; the checkpoint is kept: resubmit the job to resume"
        (( rc == 0 )) && rc=1
        return "$rc"
    fi
    return "$status"
}

# xlt_sweep_args FILE N: fills the array XLT_ARGS with run N (1-based) of a sweep file.
xlt_sweep_args() {
    local out
    out="$("$XLT_PYTHON" -m xlt.cluster line "$1" "$2")" || return 2
    mapfile -t XLT_ARGS <<<"$out"
}
