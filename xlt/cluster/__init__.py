"""Running on a cluster: sweep files (:mod:`~xlt.cluster.sweeps`), what the scheduler reports and the
decisions taken from it (:mod:`~xlt.cluster.scheduler`: why a ``TERM`` came, the restart count, the requeue
cap), checkpoint-then-exit on the scheduler's signals and the preemption record (:mod:`~xlt.cluster.signals`),
a sweep's state at a glance (:mod:`~xlt.cluster.status`, ``xlt status``) and the commands the sbatch scripts
call (:mod:`~xlt.cluster.commands`, ``python -m xlt.cluster``). docs/preemption.md and docs/clusters.md."""

from xlt.cluster.commands import main
from xlt.cluster.scheduler import (
    MAX_REQUEUES,
    MAX_REQUEUES_ENV,
    StopCause,
    fill_restart_count,
    max_requeues,
    requeue_allowed,
    restart_count,
    scontrol_job,
    scontrol_restarts,
    stop_cause,
)
from xlt.cluster.signals import (
    NOTICE_ENV,
    RECORD_ENV,
    REQUEUE_EXIT,
    SIGNALS,
    TERMINATED_EXIT,
    Preempted,
    Stopped,
    Terminated,
    _active_callbacks,
    _requested,
    agreed,
    agreed_level,
    checkpoint_callback,
    clear_preemption,
    die_with_launcher,
    install_signal_handlers,
    is_preemption,
    notice_given,
    preemption_requested,
    record_preemption,
    requeue_under_submitit,
    stop_error,
    stop_reason,
)
from xlt.cluster.sweeps import read_sweep, recipe_of, run_dir, sweep_line

__all__ = [
    "MAX_REQUEUES", "MAX_REQUEUES_ENV", "NOTICE_ENV", "RECORD_ENV", "REQUEUE_EXIT", "SIGNALS", "TERMINATED_EXIT",
    "Preempted", "StopCause", "Stopped", "Terminated", "_active_callbacks", "_requested", "agreed", "agreed_level",
    "checkpoint_callback", "clear_preemption", "die_with_launcher", "fill_restart_count", "install_signal_handlers",
    "is_preemption", "main", "max_requeues", "notice_given", "preemption_requested", "read_sweep", "recipe_of",
    "record_preemption", "requeue_allowed", "requeue_under_submitit", "restart_count", "run_dir", "scontrol_job",
    "scontrol_restarts", "stop_cause", "stop_error", "stop_reason", "sweep_line",
]
