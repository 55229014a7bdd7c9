"""Cluster helpers: sweep files, and checkpoint-then-exit on a scheduler's warning signal.

Sweep files (``sweeps/*.txt``): one run per line, ``+recipe=<name> key=value ...`` (shell-quoted where
needed); blank lines and ``#`` comments are ignored. ``python -m xlt.cluster line FILE N`` prints the
N-th run (1-based), one argument per line, for sbatch array scripts; ``count FILE`` prints the number
of runs; ``recipes FILE`` the distinct recipes; ``rundirs FILE [overrides]`` the run directories; ``stages +recipe=NAME [overrides]`` the stages a run
has (one per line).

The preemption record: once a preempted run's checkpoint is complete, rank 0 writes ``preempted.json``
into the run directory (and, when ``XLT_PREEMPTION_RECORD`` names a file, there too: slurm/common.sh
sets it). Launchers rewrite exit statuses (``accelerate launch`` and ``torchrun`` turn 75 into 1), a file
they cannot rewrite: slurm/common.sh requeues when the record exists; under submitit (Hydra's ``slurm``
launcher) rank 0 requeues its job itself once the record is written (:func:`requeue_under_submitit`). A
run that starts again removes the run directory's record.

A stop is a preemption only when the scheduler sent it (docs/preemption.md):

* ``USR1`` reached a rank: SLURM's warning signal (``--signal=USR1@N`` to the steps, ``scancel
  --signal=USR1``); no launcher ever sends it;
* ``TERM`` reached a rank while the **preemption notice** exists: slurm/common.sh's trap writes the file
  named by ``XLT_PREEMPTION_NOTICE`` when its batch shell gets the scheduler's ``USR1`` (``#SBATCH
  --signal=B:USR1@300``), before it sends ``TERM`` to the command (torch-elastic's agent forwards TERM, not
  USR1, to every worker);
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

Requeues are capped (:func:`requeue_allowed`): ``XLT_MAX_REQUEUES`` (default :data:`MAX_REQUEUES`) against
the job's restart count (:func:`restart_count`: ``SLURM_RESTART_COUNT``, else ``scontrol show job``'s
``Restarts``), in slurm/common.sh and under submitit alike. :func:`fill_restart_count` gives a step or
container started without ``SLURM_RESTART_COUNT`` the count from ``scontrol`` (the run lock tells an
earlier incarnation of the job by it), or says what cannot be told.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from xlt.errors import ConfigError
from xlt.resources import compose
from xlt.run.files import atomic_write_json
from xlt.run.layout import RunDir, run_name
from xlt.run.lock import slurm_identity

log = logging.getLogger("xlt.cluster")

SIGNALS = ("SIGUSR1", "SIGTERM")
# The exit status of a preempted run: EX_TEMPFAIL ("try again later"); slurm/common.sh requeues on it.
REQUEUE_EXIT = 75
# The exit status of a run stopped by a TERM that was not a preemption (128 + SIGTERM, as a shell reports it).
TERMINATED_EXIT = 128 + signal.SIGTERM
# slurm/common.sh writes this file (its path in the environment) before it forwards the scheduler's USR1 as TERM.
NOTICE_ENV = "XLT_PREEMPTION_NOTICE"
# How many times a job may be requeued for a preemption (``XLT_MAX_REQUEUES`` overrides; slurm/common.sh too).
MAX_REQUEUES = 20
MAX_REQUEUES_ENV = "XLT_MAX_REQUEUES"


class Stopped(KeyboardInterrupt):
    """A stop signal ended the run (after a checkpoint, during training); rerun to resume."""


class Preempted(Stopped):
    """The scheduler asked this job to stop (time limit or preemption); the job is requeued and resumes."""


class Terminated(Stopped):
    """A ``TERM`` that was no preemption (a launcher stopping its workers after one failed, ``scancel``, a
    launcher that died): the run stops without a preemption record, so the job is not requeued."""


# -- sweep files ------------------------------------------------------------------------------------


def read_sweep(path: str | Path) -> list[list[str]]:
    """The runs of a sweep file: one list of overrides per non-blank, non-comment line.

    Every run picks exactly one recipe, by name (``+recipe=<name>``); a line without one, with two, or
    with an empty name, and bytes that are not UTF-8, raise :class:`ConfigError` naming the file and line.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"sweep file {path} not found")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        lineno = data[: err.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{lineno}: bytes that are not UTF-8 ({data[err.start:err.start + 4]!r}); "
                          "save the sweep file as UTF-8") from None
    runs: list[list[str]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        try:
            args = shlex.split(line, comments=True)
        except ValueError as err:
            raise ConfigError(f"{path}:{lineno}: cannot parse line ({err}): {line!r}") from None
        if not args:
            continue
        recipes = [a for a in args if a.lstrip("+").startswith("recipe=")]
        if not recipes:
            raise ConfigError(f"{path}:{lineno}: no '+recipe=<name>' on the line: {line.strip()!r}")
        if len(recipes) > 1:
            raise ConfigError(f"{path}:{lineno}: {len(recipes)} recipes on one line ({', '.join(recipes)}); "
                              "a line is one run: exactly one '+recipe=<name>'")
        if not recipes[0].startswith("+recipe=") or not recipes[0].partition("=")[2].strip():
            raise ConfigError(f"{path}:{lineno}: {recipes[0]!r}: write '+recipe=<name>' with the recipe's name "
                              "(a file in recipes/)")
        runs.append(args)
    if not runs:
        raise ConfigError(f"sweep file {path} lists no runs")
    return runs


def sweep_line(path: str | Path, index: int) -> list[str]:
    """Run ``index`` (1-based, as ``SLURM_ARRAY_TASK_ID`` with ``--array=1-N``) of a sweep file."""
    runs = read_sweep(path)
    if not 1 <= index <= len(runs):
        raise ConfigError(f"{path}: run {index} requested, but the file lists runs 1..{len(runs)}")
    return runs[index - 1]


def run_dir(args: list[str]) -> str:
    """The run directory a run's arguments resolve to, by the entry points' one rule (``hydra.run.dir``):
    ``run_root`` of the composed config (the command line's, else the recipe's, else the schema's) and the
    run's name (:func:`xlt.run.layout.run_name`) of the run's own overrides (Hydra's ``overrides.task``: no
    ``hydra.*`` setting)."""
    task = [a for a in args if not a.lstrip("+~").startswith(("hydra.", "hydra/"))]
    return f"{compose(None, args).run_root}/{run_name(task)}"


def recipe_of(args: list[str]) -> str:
    return next(a.partition("=")[2] for a in args if a.startswith("+recipe="))


# -- preemption ---------------------------------------------------------------------------------------

RECORD_ENV = "XLT_PREEMPTION_RECORD"


def record_preemption(run_path: str | os.PathLike[str] | None, reason: str) -> list[Path]:
    """Write the preemption record (see the module docstring) into the run directory and to
    ``$XLT_PREEMPTION_RECORD``; return the files written. A record that cannot be written is logged: the
    exit status (75) still says it, where no launcher rewrites it."""
    record = {"preempted": True, "reason": reason, "signal": preemption_requested(), "time": time.time(),
              "host": socket.gethostname(), "pid": os.getpid(), "slurm": slurm_identity(),
              "run": str(run_path) if run_path is not None else None, "exit_status": REQUEUE_EXIT}
    targets = [RunDir(run_path).preemption] if run_path is not None else []
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


def clear_preemption(run_path: str | os.PathLike[str]) -> None:
    """A run starts: the run directory's preemption record of an earlier run is history."""
    RunDir(run_path).preemption.unlink(missing_ok=True)


_requested: dict[str, Any] = {"signal": None, "preemption": False}
_active_callbacks: list[Any] = []


def preemption_requested() -> str | None:
    """The name of the stop signal received (a preemption or not; see :func:`is_preemption`), or None."""
    return _requested["signal"]


def notice_given(env: Any = None) -> bool:
    """Whether slurm/common.sh has written its preemption notice (it got the scheduler's USR1)."""
    path = (os.environ if env is None else env).get(NOTICE_ENV)
    return bool(path) and os.path.exists(path)


def is_preemption() -> bool:
    """Whether the stop requested is a preemption the scheduler sent (see the module docstring); False when
    no stop was requested."""
    signal_name = _requested["signal"]
    if signal_name is None:
        return False
    if signal_name == "SIGUSR1" or _requested["preemption"]:
        return True
    if notice_given():  # the notice may become visible after the TERM (a shared file system): asked again
        _requested["preemption"] = True
    return _requested["preemption"]


def stop_error(why: str) -> Stopped:
    """:class:`Preempted` or :class:`Terminated`, as :func:`is_preemption` says, with ``why``."""
    return Preempted(why) if is_preemption() else Terminated(why)


def _handler(signum: int, frame: Any) -> None:
    name = signal.Signals(signum).name
    if name == "SIGUSR1" or _requested["signal"] is None:  # USR1 decides: the scheduler's own signal
        _requested["signal"] = name
    if name == "SIGUSR1" or notice_given():
        _requested["preemption"] = True
    kind = "preemption" if is_preemption() else "stop (not a preemption: no requeue)"
    if _active_callbacks:
        log.warning("%s received (%s): saving a checkpoint at the end of this step, then stopping", name, kind)
        return
    raise stop_error(f"{name} received")


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
    """This rank's stop request for the step-end reduction: 0 none, 1 a stop, 2 a preemption."""
    if preemption_requested() is None:
        return 0
    return 2 if is_preemption() else 1


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
                raise stop_error(f"{preemption_requested()} received; checkpoint saved at step {state.global_step}")
            return control

    return CheckpointOnSignal()


# -- requeues: the restart count and the cap ----------------------------------------------------------------

_RESTARTS = re.compile(r"\bRestarts=(\d+)\b")


def scontrol_restarts(job_id: str) -> tuple[int | None, str]:
    """``Restarts=N`` of ``scontrol show job <job_id>`` (None when it cannot be had) and why not."""
    try:
        proc = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"scontrol could not be run ({type(err).__name__}: {err})"
    found = _RESTARTS.search(proc.stdout)
    if proc.returncode != 0 or not found:
        said = (proc.stderr or proc.stdout).strip().splitlines()
        return None, f"scontrol show job {job_id} gave no restart count ({said[-1] if said else f'status {proc.returncode}'})"
    return int(found.group(1)), ""


def restart_count(env: Any = None) -> int | None:
    """How many times this SLURM job has been requeued: ``SLURM_RESTART_COUNT`` (SLURM sets it from the
    first requeue on; 0 without it before), else ``scontrol show job``'s ``Restarts`` when the variable did not
    reach this process; None outside SLURM or when it cannot be told."""
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID")
    if not job:
        return None
    if env.get("SLURM_RESTART_COUNT", "").strip().isdigit():
        return int(env["SLURM_RESTART_COUNT"])
    return scontrol_restarts(job)[0]


def fill_restart_count() -> None:
    """A SLURM step or container without ``SLURM_RESTART_COUNT`` (``srun --export=NONE``, a container that
    passes only some variables): set it from ``scontrol show job`` (``Restarts``), so that the run lock tells a
    requeue of this job from its earlier incarnation. Without scontrol, say what cannot be told."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job or os.environ.get("SLURM_RESTART_COUNT", "").strip():
        return
    count, why = scontrol_restarts(job)
    if count is not None:
        os.environ["SLURM_RESTART_COUNT"] = str(count)
        log.info("SLURM_RESTART_COUNT did not reach this process; scontrol says job %s was requeued %d time(s)",
                 job, count)
        return
    log.warning(
        "SLURM job %s: SLURM_RESTART_COUNT did not reach this process and %s. This run counts as the job's first "
        "incarnation: a lock that an earlier incarnation left on another host is taken over only when its lease "
        "expires. Pass the variable into the step or container (srun --export=ALL, or e.g. apptainer --env "
        "SLURM_RESTART_COUNT=$SLURM_RESTART_COUNT).", job, why)


def max_requeues(env: Any = None) -> int:
    """The cap on a job's requeues: ``XLT_MAX_REQUEUES`` (a non-negative integer), else :data:`MAX_REQUEUES`."""
    value = (os.environ if env is None else env).get(MAX_REQUEUES_ENV, "").strip()
    if not value:
        return MAX_REQUEUES
    if not value.isdigit():
        raise ConfigError(f"{MAX_REQUEUES_ENV}={value!r}: give the most requeues a job may have, a whole number >= 0")
    return int(value)


def requeue_allowed(env: Any = None) -> tuple[bool, str]:
    """Whether this job may be requeued once more (its restart count below :func:`max_requeues`), and why."""
    cap, count = max_requeues(env), restart_count(env)
    if count is None:
        return True, f"restart count unknown (cap {cap} not applied)"
    if count >= cap:
        return False, (f"job requeued {count} time(s) already, the cap ({MAX_REQUEUES_ENV}={cap}): not requeued "
                       "again; resubmit it to resume")
    return True, f"requeue {count + 1} of at most {cap}"


# -- command line ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = "usage: python -m xlt.cluster {line FILE N | count FILE | recipes FILE | rundirs FILE [overrides] | stages +recipe=NAME [overrides]}"
    try:
        if len(argv) == 3 and argv[0] == "line":
            print("\n".join(sweep_line(argv[1], int(argv[2]))))
        elif len(argv) == 2 and argv[0] == "count":
            print(len(read_sweep(argv[1])))
        elif len(argv) == 2 and argv[0] == "recipes":
            print("\n".join(dict.fromkeys(recipe_of(r) for r in read_sweep(argv[1]))))
        elif len(argv) >= 2 and argv[0] == "rundirs":
            extra = argv[2:]
            print("\n".join(dict.fromkeys(run_dir([*r, *extra]) for r in read_sweep(argv[1]))))
        elif len(argv) >= 2 and argv[0] == "stages":
            print("\n".join(compose(None, argv[1:]).stages))
        else:
            print(usage, file=sys.stderr)
            return 2
    except (ConfigError, ValueError) as err:
        print(f"xlt: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
