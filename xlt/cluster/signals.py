"""Stop signals: checkpoint, then exit, when the scheduler warns; the preemption record the launchers read.

The preemption record: once a preempted run's checkpoint is complete, rank 0 writes ``preempted.json``
into the run directory (and, when ``XLT_PREEMPTION_RECORD`` names a file, there too: shell/forward.sh
sets it). Launchers rewrite exit statuses (``accelerate launch`` and ``torchrun`` turn 75 into 1), a file
they cannot rewrite: the batch shell requeues when the record exists (unless SLURM requeues the job itself);
under submitit (Hydra's ``slurm`` launcher) rank 0 requeues its job itself once the record is written
(:func:`requeue_under_submitit`). A call that starts again removes its own record (a shard's call its
shard's ``preempted.<shard>.json``: another shard's record stays).

A stop is a preemption only when the scheduler sent it (docs/preemption.md):

* ``USR1`` reached a rank: SLURM's warning signal (``--signal=USR1@N`` to the steps, ``scancel
  --signal=USR1``, a preemption under ``PreemptParameters=send_user_signal``); no launcher ever sends it;
* ``TERM`` reached a rank while the **preemption notice** exists: slurm/common.sh's trap writes the file
  named by ``XLT_PREEMPTION_NOTICE`` when its batch shell gets the scheduler's ``USR1`` (``#SBATCH
  --signal=B:USR1@300``), before it sends ``TERM`` to the command (torch-elastic's agent forwards TERM, not
  USR1, to every worker);
* ``TERM`` reached a rank and the scheduler says it sent it to preempt the job or at its time limit
  (:func:`xlt.cluster.scheduler.stop_cause`, asked once);
* another rank was preempted (the step-end reduction below carries the kind of stop).

Any other ``TERM`` is a termination: torch-elastic (torchrun, ``accelerate launch``) TERMs the surviving
workers when one worker fails (``LocalElasticAgent._stop_workers`` -> ``_shutdown(SIGTERM)``), ``scancel``
TERMs every process, a launcher killed by the OOM killer TERMs its workers through ``PR_SET_PDEATHSIG``.
The run stops the same way (a checkpoint at the step's end during training, at once outside it) but raises
:class:`Terminated`: no preemption record, exit status 143, so no crash is requeued.

:func:`install_signal_handlers` handles ``USR1`` and ``TERM``: a request that :func:`checkpoint_callback`
(a ``TrainerCallback``) honours at the end of the current optimizer step. Under several ranks the request
is reduced across them at every step end (``all_reduce`` MAX of the local stop: 0 none, 1 terminate, 2
preempt), so every rank saves at the same step, even when the signal reached only some of them or at
different steps, and every rank agrees whether it was a preemption; one full checkpoint is written with its
completeness record, then every rank stops with :class:`Preempted` (rank 0 writes the preemption record and
the entry points exit with :data:`REQUEUE_EXIT`) or :class:`Terminated`. Outside training (no callback
active) the signal raises at once; every stage writes atomically and resumes, so nothing is lost but the
unfinished item. Workers of a launcher die with it (:func:`die_with_launcher`: ``PR_SET_PDEATHSIG`` = TERM,
so a launcher killed by any signal still gets its workers' checkpoint, and none outlives it holding the
run's lock).
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from xlt.cluster.backend import active_scheduler
from xlt.cluster.scheduler import REQUEUE_EXIT, TERMINATED_EXIT, requeue_allowed, stop_cause
from xlt.run.files import atomic_write_json
from xlt.run.layout import RunDir
from xlt.run.lock import report_progress, slurm_identity

log = logging.getLogger("xlt.cluster")

SIGNALS = ("SIGUSR1", "SIGTERM")
# slurm/common.sh writes this file (its path in the environment) before it forwards the scheduler's USR1 as TERM.
NOTICE_ENV = "XLT_PREEMPTION_NOTICE"


class Stopped(KeyboardInterrupt):
    """A stop signal ended the run (after a checkpoint, during training); rerun to resume."""


class Preempted(Stopped):
    """The scheduler asked this job to stop (time limit or preemption); the job is requeued and resumes."""


class Terminated(Stopped):
    """A ``TERM`` that was no preemption (a launcher stopping its workers after one failed, ``scancel``, a
    launcher that died): the run stops without a preemption record, so the job is not requeued."""


RECORD_ENV = "XLT_PREEMPTION_RECORD"


def record_preemption(run_path: str | os.PathLike[str] | None, reason: str, preempted: bool = True,
                      shard: str | None = None) -> list[Path]:
    """Write the preemption record (see the module docstring) into the run directory (``preempted.json``, or
    ``preempted.<shard>.json`` for a shard's call: :func:`xlt.run.layout.shard_record`) and to
    ``$XLT_PREEMPTION_RECORD``; return the files written. A record that cannot be written is logged: the
    exit status (75) still says it, where no launcher rewrites it. ``preempted=False``: a stop that was no
    preemption, recorded only for the batch shell (``$XLT_PREEMPTION_RECORD``), so that it reads the
    scheduler's answer rank 0 had instead of asking a second time."""
    cause = _requested["cause"]
    record = {"preempted": preempted, "reason": reason, "signal": preemption_requested(), "time": time.time(),
              "signal_time": _requested["time"], "host": socket.gethostname(), "pid": os.getpid(),
              "slurm": slurm_identity(), "run": str(run_path) if run_path is not None else None,
              "exit_status": REQUEUE_EXIT if preempted else TERMINATED_EXIT, "cause": stop_reason(),
              "asked_scheduler": cause is not None,
              "requeued_by_scheduler": bool(cause and cause.requeued_by_scheduler)}
    ident = active_scheduler().identity()
    if ident is not None:  # under a scheduler: its job (SLURM's is "slurm" too, as ever)
        record["scheduler"] = ident.as_dict()
    targets = [RunDir(run_path).preemption_of(shard)] if run_path is not None and preempted else []
    if os.environ.get(RECORD_ENV):
        targets.append(Path(os.environ[RECORD_ENV]))
    written = []
    for path in targets:
        try:
            atomic_write_json(path, record)
            written.append(path)
        except OSError as err:  # WriteError: an XltError and an OSError
            log.warning("could not write the preemption record: %s", err)
    return written


def requeue_under_submitit(written: list[Path]) -> bool:
    """Under submitit's SLURM executor (Hydra's ``slurm`` launcher), the job that wrote a preemption record
    is requeued here, as submitit's own preemption handler does (``scontrol requeue <job>``): the entry point
    then exits without a result, so the requeued job runs the same submission and resumes. True: requeued."""
    if os.environ.get("SUBMITIT_EXECUTOR") != "slurm" or not written:
        return False
    if _requested["cause"] is not None and _requested["cause"].requeued_by_scheduler:
        log.warning("preempted: SLURM requeues the job itself (%s); not requeued a second time",
                    _requested["cause"].why)
        return True
    allowed, why = requeue_allowed()
    if not allowed:
        log.error("preempted, but %s", why)
        return False
    try:
        import submitit

        env = submitit.JobEnvironment()
        env._requeue(0)  # what submitit's SignalHandler calls after a checkpoint (SlurmJobEnvironment)
    except Exception as err:  # noqa: BLE001 - scontrol missing or refusing: the run resumes when rerun by hand
        log.warning("could not requeue the submitit job after the preemption (%s: %s); rerun it to resume",
                    type(err).__name__, err)
        return False
    log.warning("preempted: submitit job %s requeued", env.job_id)
    return True


def clear_preemption(run_path: str | os.PathLike[str], shard: str | None = None) -> None:
    """A call starts: its own preemption record of an earlier call is history (a shard's call clears only its
    shard's record, ``preempted.<shard>.json``; a whole-run call the plain ``preempted.json``)."""
    RunDir(run_path).preemption_of(shard).unlink(missing_ok=True)


_requested: dict[str, Any] = {"signal": None, "preemption": False, "cause": None, "time": None, "decided": False}
_active_callbacks: list[Any] = []


def preemption_requested() -> str | None:
    """The name of the stop signal received (a preemption or not; see :func:`is_preemption`), or None."""
    return _requested["signal"]


def notice_given(env: Any = None) -> bool:
    """Whether slurm/common.sh has written its preemption notice (it got the scheduler's USR1)."""
    path = (os.environ if env is None else env).get(NOTICE_ENV)
    return bool(path) and os.path.exists(path)


def _known_preemption() -> bool:
    """A preemption without asking anyone: the scheduler's USR1, the notice, or a verdict already taken."""
    if _requested["signal"] == "SIGUSR1" or _requested["preemption"]:
        return True
    if notice_given():  # the notice may become visible after the TERM (a shared file system): looked at again
        _requested["preemption"] = True
    return _requested["preemption"]


def _ask_scheduler() -> None:
    """A TERM without the notice: only the scheduler knows why. Asked once per job: by rank 0 only, after the
    checkpoint, never inside a signal handler, bounded (:func:`xlt.cluster.scheduler.scheduler_timeout`); a
    silent controller makes it a termination (the checkpoint is kept; resubmit to resume)."""
    if _requested["cause"] is not None or _requested["decided"] or int(os.environ.get("RANK", "0") or 0) != 0:
        return
    if _requested["signal"] != "SIGTERM":
        return
    _requested["cause"] = stop_cause(signal_time=_requested["time"])
    log.warning("SIGTERM: %s", _requested["cause"].describe())
    if _requested["cause"].preemption:
        _requested["preemption"] = True


def is_preemption() -> bool:
    """Whether the stop requested is a preemption the scheduler sent (see the module docstring); False when
    no stop was requested. Asks the scheduler (rank 0, once) for a TERM without the notice: call it after the
    checkpoint, outside a signal handler."""
    if _requested["signal"] is None:
        return False
    if _known_preemption():
        return True
    _ask_scheduler()
    return _requested["preemption"]


def decide_stop(device: Any = None) -> bool:
    """After the checkpoint, every rank together: rank 0 asks the scheduler (once, for a TERM without the
    notice), and every rank takes the answer (``all_reduce`` MAX). True: a preemption."""
    local = 2 if _known_preemption() else 1
    if local == 1:
        _ask_scheduler()
        local = 2 if _requested["preemption"] else 1
    level = agreed_level(local, device)
    _requested["preemption"] = level == 2
    _requested["decided"] = True
    return _requested["preemption"]


def stop_reason() -> str:
    """Why the stop requested is (or is not) a preemption, for the log."""
    cause = _requested["cause"]
    if cause is not None:
        return cause.describe()
    if _requested["signal"] == "SIGUSR1":
        return "the scheduler's USR1 (its warning before the time limit, or a preemption's user signal)"
    if notice_given():
        return "the scheduler's USR1 (or a preemption's grace) reached the batch shell, which sent the TERM (slurm/common.sh)"
    if _requested["preemption"]:
        return "a preemption (rank 0 had the scheduler's answer)"
    if active_scheduler().identity() is None:  # no scheduler to ask: said without a question
        return stop_cause().describe()
    return f"{_requested['signal'] or 'no signal'}: not from the scheduler"


def stop_error(why: str) -> Stopped:
    """:class:`Preempted` or :class:`Terminated`, as :func:`is_preemption` says, with ``why``."""
    return Preempted(why) if is_preemption() else Terminated(why)


def _handler(signum: int, frame: Any) -> None:
    # Never waits on anyone (the scheduler is asked after the checkpoint): records the request, and outside
    # training stops at once.
    name = signal.Signals(signum).name
    if _requested["signal"] is None:
        _requested["cause"] = None  # asked anew for this stop
        _requested["time"] = time.time()
        _requested["decided"] = False
    if name == "SIGUSR1" or _requested["signal"] is None:  # USR1 decides: the scheduler's own signal
        _requested["signal"] = name
    known = _known_preemption()
    kind = "preemption" if known else "stop (whether a preemption: asked of the scheduler after the checkpoint)"
    if _active_callbacks:
        log.warning("%s received (%s): saving a checkpoint at the end of this step, then stopping", name, kind)
        return
    raise Preempted(f"{name} received") if known else Terminated(f"{name} received")


def install_signal_handlers(signals: tuple[str, ...] = SIGNALS) -> None:
    """Handle the scheduler's warning signals (see the module docstring). Main thread only."""
    for name in signals:
        signal.signal(getattr(signal, name), _handler)


def die_with_launcher() -> None:
    """Under a launcher (torch-elastic / accelerate, ``srun``): get ``TERM`` when the launching process dies
    (Linux ``PR_SET_PDEATHSIG``), i.e. checkpoint and stop instead of training on as an orphan."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    PR_SET_PDEATHSIG = 1
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) != 0:
        log.warning("could not ask to be signalled when the launcher dies (errno %d)", ctypes.get_errno())
    elif parent == 1 or os.getppid() != parent:  # the launcher died before the request was in place
        os.kill(os.getpid(), signal.SIGTERM)


def agreed(flag: bool, device: Any = None) -> bool:
    """``flag`` of any rank (``all_reduce`` MAX over the process group; the flag itself when not distributed)."""
    return agreed_level(int(flag), device) > 0


def agreed_level(level: int, device: Any = None) -> int:
    """The highest ``level`` of any rank (``all_reduce`` MAX; ``level`` itself when not distributed)."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return level
    t = torch.tensor([level], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def _stop_level() -> int:
    """This rank's stop request for the step-end reduction: 0 none, 1 a stop, 2 a preemption (known without
    asking: the scheduler is asked after the checkpoint, :func:`decide_stop`)."""
    if preemption_requested() is None:
        return 0
    return 2 if _known_preemption() else 1


def checkpoint_callback() -> Any:
    """A ``TrainerCallback``: after a stop signal, save a checkpoint at the step's end, then raise
    :class:`Preempted` or :class:`Terminated`. (Built on demand so that this module imports without
    transformers.)"""
    from transformers import TrainerCallback

    class CheckpointOnSignal(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            _active_callbacks.append(self)
            return control

        def on_train_end(self, args, state, control, **kwargs):
            if self in _active_callbacks:
                _active_callbacks.remove(self)
            return control

        def on_step_end(self, args, state, control, **kwargs):
            # Every rank, every step: the ranks save at the same step or none does (a collective), and agree
            # whether the stop is a preemption.
            report_progress(step=state.global_step, max_steps=state.max_steps)  # xlt status reads it
            level = agreed_level(_stop_level(), args.device)
            if level:
                if not preemption_requested():
                    _requested["signal"] = "a signal to another rank"
                    log.warning("another rank was asked to stop: saving a checkpoint at step %d", state.global_step)
                if level == 2:
                    _requested["preemption"] = True
                control.should_save = True
                control.should_log = True  # the checkpoint's log history covers every step (see checkpoints.py)
            return control

        def on_save(self, args, state, control, **kwargs):
            if preemption_requested():
                if self in _active_callbacks:
                    _active_callbacks.remove(self)
                decide_stop(args.device)  # the checkpoint is saved: now the scheduler may be asked (rank 0)
                raise stop_error(f"{preemption_requested()} received; checkpoint saved at step {state.global_step}")
            return control

    return CheckpointOnSignal()

