# Shared by the xlt sbatch scripts (sourced, not run). Sets the environment of offline compute nodes and
# defines xlt_exec, which runs a command so that a job survives its time limit or preemption:
#
#   #SBATCH --signal=B:USR1@300   SLURM signals the batch shell 300 s before the limit;
#   trap                          the shell writes the preemption notice ($XLT_PREEMPTION_NOTICE, set here
#                                 for each command), then sends TERM to the command it runs (python, srun or
#                                 accelerate launch: srun forwards it to its tasks, torch-elastic's agent
#                                 to every worker; the agent handles TERM but not USR1), waits up to
#                                 XLT_GRACE seconds for it, then `scontrol requeue`s the job.
#
# xlt takes a TERM for a preemption only while the notice exists (or after a USR1): every rank saves one
# checkpoint at the same step, rank 0 writes the preemption record (the file $XLT_PREEMPTION_RECORD, set here
# for each command) once that checkpoint is complete, and every rank exits with status 75. A command that
# leaves the record is requeued too (the scheduler's USR1 delivered to the processes directly), whatever its
# exit status: `accelerate launch` and `torchrun` turn the workers' 75 into 1. The requeued job runs the same
# command; finished stages are skipped and training resumes from its last checkpoint.
#
# A TERM that SLURM sends to the whole job (a preemption without a user signal, the time limit without
# --signal, scancel) reaches the batch shell and the command alike: the shell forwards it, and once the command
# has stopped asks `python -m xlt.cluster stop-cause`, the one place that tells them apart by what the scheduler
# reports (xlt/cluster/scheduler.py): a preemption that SLURM requeues itself (PreemptMode=REQUEUE) is logged as
# one and not requeued a second time; a preemption SLURM does not requeue and the time limit are requeued here;
# scancel is not (the log says which, and why).
# Nothing else is requeued: a worker that crashes makes torch-elastic TERM the others, which stop without a
# record (exit 143; the launcher returns 1): the job ends failed with the failing rank's error in its log.
# Requeues are capped: a job already requeued XLT_MAX_REQUEUES times (SLURM_RESTART_COUNT, else
# scontrol's Restarts, else this script's own count in XLT_RECORD_DIR) ends failed instead.
# See docs/preemption.md.
#
# Knobs (environment variables): XLT_PYTHON (python executable), XLT_SETUP (a file sourced first:
# module load / conda activate), XLT_GRACE (seconds to wait after USR1, default 240), XLT_MAX_REQUEUES
# (default 20), XLT_DRY_RUN=1 (print the commands instead of running them), XLT_RECORD_DIR (a folder every
# node sees, for the preemption records and notices; default slurm-logs/ in the submission folder, $TMPDIR
# outside SLURM).

set -uo pipefail

if [[ -n "${XLT_SETUP:-}" ]]; then
    # shellcheck disable=SC1090
    source "$XLT_SETUP"
fi
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
export HF_DATASETS_OFFLINE="${HF_DATASETS_OFFLINE:-$HF_HUB_OFFLINE}"
export TRANSFORMERS_OFFLINE="${TRANSFORMERS_OFFLINE:-$HF_HUB_OFFLINE}"
export TOKENIZERS_PARALLELISM="${TOKENIZERS_PARALLELISM:-false}"
XLT_PYTHON="${XLT_PYTHON:-python}"
XLT_GRACE="${XLT_GRACE:-240}"
XLT_MAX_REQUEUES="${XLT_MAX_REQUEUES:-20}"
export XLT_MAX_REQUEUES  # the same cap for a job that Python requeues itself (submitit)
# torch-elastic's agent gives its workers this long after forwarding TERM before it SIGKILLs them (default 30).
export TORCH_ELASTIC_SHUTDOWN_TIMEOUT="${TORCH_ELASTIC_SHUTDOWN_TIMEOUT:-$XLT_GRACE}"
XLT_REQUEUE_EXIT=75
XLT_CHILD=""
XLT_REQUEUE=0
XLT_TERMINATED=0

xlt_log() { echo "[xlt $(date '+%F %T')] $*" >&2; }

xlt_on_usr1() {
    xlt_log "USR1 from the scheduler (its warning before the time limit, or a preemption's user signal):" \
            "sending TERM to pid ${XLT_CHILD} (checkpoint and stop), then requeueing"
    XLT_REQUEUE=1
    # First the notice (the workers take the TERM that follows for a preemption), then the TERM.
    [[ -n "${XLT_PREEMPTION_NOTICE:-}" ]] && echo "USR1 $(date +%s) job ${SLURM_JOB_ID:-local}" > "$XLT_PREEMPTION_NOTICE"
    [[ -n "$XLT_CHILD" ]] && kill -TERM "$XLT_CHILD" 2>/dev/null
}

xlt_on_term() {
    xlt_log "TERM: forwarding to pid ${XLT_CHILD}; asking the scheduler why once it has stopped"
    XLT_TERMINATED=1
    [[ -n "$XLT_CHILD" ]] && kill -TERM "$XLT_CHILD" 2>/dev/null
}

# xlt_job_name: the job as a user finds it in squeue (array elements as ARRAYJOB_INDEX).
xlt_job_name() {
    if [[ -n "${SLURM_ARRAY_JOB_ID:-}" ]]; then echo "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
    else echo "${SLURM_JOB_ID:-local}"; fi
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
    if [[ -n "${SLURM_JOB_ID:-}" ]]; then
        # SLURM sets SLURM_RESTART_COUNT only from the first requeue on: the command gets 0 before, so that it
        # need not ask scontrol (it does when a step or container drops the variable).
        SLURM_RESTART_COUNT="${SLURM_RESTART_COUNT:-0}" "$@" &
    else
        "$@" &
    fi
    XLT_CHILD=$!
    trap xlt_on_usr1 USR1
    trap xlt_on_term TERM
    local rc waited=0
    wait "$XLT_CHILD"; rc=$?
    # `wait` returns early (status > 128) when a trapped signal arrives: keep waiting for the child,
    # at most XLT_GRACE seconds after a USR1.
    while kill -0 "$XLT_CHILD" 2>/dev/null; do
        if [[ "$XLT_REQUEUE" == 1 ]] && (( waited >= XLT_GRACE )); then
            xlt_log "pid ${XLT_CHILD} still running after ${XLT_GRACE}s; killing it and requeueing anyway"
            kill -KILL "$XLT_CHILD" 2>/dev/null
            break
        fi
        sleep 1 & wait $! 2>/dev/null
        waited=$((waited + 1))
    done
    if ! kill -0 "$XLT_CHILD" 2>/dev/null; then
        wait "$XLT_CHILD" 2>/dev/null; rc=$?
    fi
    trap - USR1 TERM
    rm -f "$XLT_PREEMPTION_NOTICE"
    local cause="" by_slurm=0
    if [[ "$XLT_TERMINATED" == 1 && "$XLT_REQUEUE" == 0 && -n "${SLURM_JOB_ID:-}" ]]; then
        # A TERM to the batch shell itself, without the scheduler's USR1 first: only the scheduler knows why.
        if [[ -f "$XLT_PREEMPTION_RECORD" ]]; then
            # The command asked it already (xlt.cluster.scheduler.stop_cause) and says so in its record: no
            # second question, no interpreter start-up inside the grace time.
            cause="$(grep -o '"cause": *"[^"]*"' "$XLT_PREEMPTION_RECORD" | head -n1 | sed 's/^"cause": *"//; s/"$//')"
            if grep -q '"requeued_by_scheduler": *true' "$XLT_PREEMPTION_RECORD"; then
                cause="requeued-by-slurm ${cause}"
            else
                cause="requeue ${cause}"
            fi
        else
            cause="$(SLURM_RESTART_COUNT="${SLURM_RESTART_COUNT:-0}" "$XLT_PYTHON" -m xlt.cluster stop-cause 2>/dev/null)"
            cause="${cause:-stop the scheduler could not be asked (python -m xlt.cluster stop-cause failed)}"
        fi
        xlt_log "why the TERM came: ${cause#* }"
        case "${cause%% *}" in
            requeued-by-slurm) by_slurm=1 ;;
            requeue) XLT_REQUEUE=1 ;;
        esac
    fi
    if [[ -f "$XLT_PREEMPTION_RECORD" ]]; then
        xlt_log "preemption record $XLT_PREEMPTION_RECORD: $(tr -d '\n' < "$XLT_PREEMPTION_RECORD" | cut -c1-300)"
        rm -f "$XLT_PREEMPTION_RECORD"
        [[ "$XLT_TERMINATED" == 0 ]] && XLT_REQUEUE=1  # preempted, checkpoint complete: whatever the launcher's status
    elif [[ "$rc" == "$XLT_REQUEUE_EXIT" && "$XLT_TERMINATED" == 0 ]]; then
        XLT_REQUEUE=1  # exit 75 without a record (it could not be written): checkpoint written all the same
    fi
    if [[ "$by_slurm" == 1 ]]; then
        xlt_log "preempted: job $(xlt_job_name) is requeued by SLURM itself and resumes from its checkpoint;" \
                "not requeued a second time (exit status of the command: $rc)"
        return "$XLT_REQUEUE_EXIT"
    fi
    if [[ "$XLT_REQUEUE" == 1 && -n "${SLURM_JOB_ID:-}" ]]; then
        local count counter="$record_dir/.xlt-requeues-${SLURM_JOB_ID}"
        count="$(xlt_restart_count "$counter")"
        if (( count >= XLT_MAX_REQUEUES )); then
            xlt_log "preempted, but job ${SLURM_JOB_ID} was requeued ${count} time(s) already, the cap" \
                    "(XLT_MAX_REQUEUES=${XLT_MAX_REQUEUES}): not requeued again; the job ends failed." \
                    "Resubmit it to resume from its last checkpoint."
            return $(( rc == 0 ? 1 : rc ))
        fi
        xlt_log "requeueing job ${SLURM_JOB_ID} (requeue $((count + 1)) of at most ${XLT_MAX_REQUEUES}; exit status of the command: $rc)"
        echo "$((count + 1))" > "$counter"
        scontrol requeue "$SLURM_JOB_ID"
        return 0
    fi
    if [[ "$rc" != 0 ]]; then
        if [[ -n "$cause" ]]; then
            xlt_log "job $(xlt_job_name) stopped (exit status $rc): ${cause#* }; not requeued"
        else
            xlt_log "job $(xlt_job_name) failed (exit status $rc) and no preemption was sent to it: not requeued;" \
                    "the error is above"
        fi
    fi
    return "$rc"
}

# xlt_restart_count COUNTER_FILE: how many times this job was requeued: the largest of SLURM_RESTART_COUNT
# (else scontrol's Restarts=, for a batch shell that did not get the variable) and this script's own count.
xlt_restart_count() {
    local slurm="${SLURM_RESTART_COUNT:-}" own=0
    if [[ ! "$slurm" =~ ^[0-9]+$ ]]; then
        slurm="$(scontrol show job -o "$SLURM_JOB_ID" 2>/dev/null | grep -o 'Restarts=[0-9]*' | head -n1 | cut -d= -f2)"
        if [[ ! "$slurm" =~ ^[0-9]+$ ]]; then
            xlt_log "SLURM_RESTART_COUNT is not set and scontrol gave no restart count: counting this script's own requeues"
            slurm=0
        fi
    fi
    [[ -f "$1" ]] && own="$(tr -cd '0-9' < "$1")"
    own="${own:-0}"
    echo $(( slurm > own ? slurm : own ))
}

# xlt_sweep_args FILE N: fills the array XLT_ARGS with run N (1-based) of a sweep file.
xlt_sweep_args() {
    local out
    out="$("$XLT_PYTHON" -m xlt.cluster line "$1" "$2")" || return 2
    mapfile -t XLT_ARGS <<<"$out"
}
