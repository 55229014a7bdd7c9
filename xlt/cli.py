"""Hydra entry points: compose and validate the config, find the run directory, run stages.

``python -m xlt.train`` runs every stage the recipe lists; ``python -m xlt.build_data``,
``xlt.translate``, ``xlt.finetune``, ``xlt.evaluate`` and ``xlt.report`` run one stage each, on the
same run directory (derived from the same recipe and overrides).
"""

from __future__ import annotations

# isort: off
import xlt.startup  # noqa: F401 - first: full collections made rarer before hydra, datasets, torch are imported
# isort: on
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Callable, Sequence

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from xlt import config as xcfg
from xlt.cluster.backend import active_scheduler
from xlt.cluster.scheduler import fill_restart_count
from xlt.cluster.signals import (
    REQUEUE_EXIT,
    SIGNALS,
    TERMINATED_EXIT,
    Stopped,
    clear_preemption,
    die_with_launcher,
    install_signal_handlers,
    is_preemption,
    record_preemption,
    requeue_under_submitit,
    stop_reason,
)
from xlt.config import CONF_DIR
from xlt.config.overrides import check_overrides, check_parsable, entry_overrides, new_entries, override_form
from xlt.errors import ERROR_EXIT, XltError, print_error
from xlt.run.files import atomic_write_json, atomic_write_text
from xlt.run.layout import PREEMPTION_FILE, WHOLE_RUN, RunDir, is_main_process, world_size
from xlt.run.lock import (
    LockLost,
    RunLock,
    check_held,
    lock_name,
    lost_error,
    read_scheduler_with,
    scheduler_identity,
    slurm_identity,
)
from xlt.secrets import redact_config, redact_overrides
from xlt.stages import run_stages

log = logging.getLogger("xlt")


def _job_identity() -> dict | None:
    """This process's job under whichever scheduler runs it (xlt.cluster.backend), for the lock and the records."""
    ident = active_scheduler().identity()
    return ident.as_dict() if ident is not None else None


read_scheduler_with(_job_identity)  # the run layer asks no scheduler itself



def _fail(err: XltError) -> None:
    sys.exit(print_error(err))


# Jobs of a Hydra multirun that failed (their overrides, the error): listed once the sweep ends.
_FAILED_JOBS: list[tuple[str, str]] = []


def _multirun_continues(cfg: DictConfig, err: XltError) -> bool:
    """In a multirun, record a failed job and let the sweep go on (unless ``multirun_fail_fast=true``)."""
    from hydra.types import RunMode

    hc = HydraConfig.get()
    if hc.mode != RunMode.MULTIRUN or OmegaConf.select(cfg, "multirun_fail_fast", default=False) is True:
        return False
    job = " ".join(hc.overrides.task)
    print(f"\nxlt: error: job {hc.job.num} ({job}): {err}\n  The sweep goes on with the next job "
          "(multirun_fail_fast=true stops at the first failure).", file=sys.stderr)
    _FAILED_JOBS.append((job, str(err).splitlines()[0]))
    return True


xcfg.register()


def _setup_logging() -> None:
    if not is_main_process():
        logging.getLogger().setLevel(logging.WARNING)
    for noisy in ("httpx", "urllib3", "filelock", "datasets", "huggingface_hub"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def resolve_run(cfg: DictConfig, stages: Sequence[str] | None = None) -> tuple[DictConfig, RunDir]:
    """Validate ``cfg`` for ``stages`` (rejecting unknown keys and bad values); return it and its run directory."""
    stages = list(cfg.stages) if stages is None else list(stages)
    validated = xcfg.validate(cfg, stages)
    run = RunDir(HydraConfig.get().runtime.output_dir)
    return validated, run


def _record_failure(run: RunDir | None, status: int, error: str, shard: str | None = None) -> None:
    """``failed.json`` in the run directory (``failed.<shard>.json`` for a shard's call: each shard keeps its
    own): this call failed (exit status, first line of the error), for ``xlt status``; removed when the same
    call (the same shard) starts again. Never in the way of the error itself."""
    if run is None or not is_main_process():
        return
    record = {"exit_status": status, "error": error.strip().splitlines()[0][:500] if error.strip() else "",
              "time": time.time(), "host": socket.gethostname(), "slurm": slurm_identity(),
              "overrides": redact_overrides(sys.argv[1:])}
    if shard is not None and shard != WHOLE_RUN:
        record["shard"] = shard
    path = run.failure_of(shard)
    if scheduler_identity() is not None:  # under a scheduler: its job (SLURM's is "slurm" too, as ever)
        record["scheduler"] = scheduler_identity()
    try:
        atomic_write_json(path, record)
    except OSError as err:
        log.warning("could not record the failure in %s: %s", path, err)


def _record_call(run: RunDir, stages: Sequence[str], ran: Sequence[str]) -> None:
    """Append this call to ``calls.jsonl`` (time, command-line overrides, stages run and skipped)."""
    line = {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "overrides": redact_overrides(sys.argv[1:]),
            "stages": list(stages), "ran": list(ran)}
    path = run.calls
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    except OSError as err:  # the call log is a record, not a result: the run itself is done
        fix = "remove the folder there so the next call is" if path.is_dir() else "check the run directory's permissions"
        log.warning("this call is not recorded in %s (%s): %s", path, err.strerror or err, fix)


def _leave_process_group() -> None:
    """Destroy a live process group before exiting (gloo aborts the process at exit otherwise)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def make_main(default_stages: Sequence[str] | None) -> Callable[[], None]:
    """Build a Hydra entry point that runs ``default_stages`` (None: the stages the config lists)."""

    @hydra.main(config_path=CONF_DIR, config_name="config", version_base="1.3")
    def _hydra_main(cfg: DictConfig) -> None:
        run = shard = None
        try:  # from the first line: a stop signal (or a launcher already dead) takes the exit-75 path
            _setup_logging()
            # SLURM warns with USR1 before the time limit: checkpoint, stop, and let the requeued job resume.
            # Under submitit, TERM is left to submitit's own handler.
            install_signal_handlers(("SIGUSR1",) if os.environ.get("SUBMITIT_EXECUTOR") else SIGNALS)
            if world_size() > 1:
                die_with_launcher()
            validated, run = resolve_run(cfg, default_stages)
            stages = list(default_stages) if default_stages is not None else list(validated.stages)
            log.info("run directory: %s (world size %d)", run.path, world_size())

            def write_config() -> None:
                if is_main_process():
                    atomic_write_text(run.config, OmegaConf.to_yaml(redact_config(validated)))

            rank = int(os.environ.get("RANK", "0"))
            fill_restart_count()  # a step or container without SLURM_RESTART_COUNT: the lock needs it
            shard = lock_name(validated.translate, validated.eval)  # "run", or this shard's: its records' names
            with RunLock(run.path, shard, rank=rank, interrupt=True) as lock:
                if is_main_process():
                    clear_preemption(run.path, shard)
                    run.failure_of(shard).unlink(missing_ok=True)
                ran = run_stages(validated, run, stages, on_first_run=write_config, launch=lock.owner)
                if is_main_process():
                    check_held()
                    _record_call(run, stages, ran)
                    if "train" in ran and run.model.exists():  # a path with '=' and ',': quoted as it is typed
                        log.info("trained model: %s; to score it from another run: %s", run.model,
                                 override_form("eval.model", run.model))
        except XltError as err:
            if not isinstance(err, LockLost):  # the run is another holder's now: nothing of ours goes in it
                _record_failure(run, ERROR_EXIT, f"xlt: error: {err}", shard)
            if not _multirun_continues(cfg, err):
                _fail(err)
        except Stopped as err:
            _leave_process_group()
            if not is_preemption():  # a TERM the scheduler did not send: scancel, a launcher stopping its workers
                _record_failure(run, TERMINATED_EXIT, f"stopped ({err}): {stop_reason()}", shard)
                if is_main_process():  # the scheduler's answer, for the batch shell: it need not ask again
                    record_preemption(run.path if run is not None else None, str(err), preempted=False, shard=shard)
                print(f"\nxlt: stopped ({err}); {stop_reason()}; so the job is not requeued (exit status "
                      f"{TERMINATED_EXIT}). Under a launcher, the worker that failed first is above. Rerun the same "
                      "command to resume.", file=sys.stderr)
                sys.exit(TERMINATED_EXIT)
            if is_main_process():  # every rank is past the checkpoint's record (a barrier): rank 0 says so
                requeue_under_submitit(record_preemption(run.path if run is not None else None, str(err), shard=shard))
            print(f"\nxlt: preempted ({err}; {stop_reason()}); rerun the same command to resume (exit status "
                  f"{REQUEUE_EXIT}, and the record {PREEMPTION_FILE}: the batch shell (slurm/common.sh, "
                  "gridengine/common.sh) requeues the job unless the scheduler does).", file=sys.stderr)
            sys.exit(REQUEUE_EXIT)
        except Exception as err:  # a crash: recorded for `xlt status`, then the traceback as ever
            _record_failure(run, 1, f"{type(err).__name__}: {err}", shard)
            raise
        except KeyboardInterrupt:
            if lost_error() is not None:  # the lock's heartbeat stopped this run: another took the directory
                _fail(lost_error())
            print("\nxlt: interrupted; rerun the same command to resume.", file=sys.stderr)
            sys.exit(130)

    def _main() -> None:
        # Overrides are checked before Hydra composes them, so a misspelled key or a secret on the
        # command line gets a clear message (and a secret never reaches the run directory's name).
        overrides = [a for a in sys.argv[1:] if "=" in a and not a.startswith("-")]
        try:
            check_overrides(overrides)  # first: a secret on the command line is never echoed
            check_parsable(overrides)
        except XltError as err:
            _fail(err)
        xcfg.register(new_entries(overrides))  # a benchmark entry added on the command line
        sys.argv[1:] = entry_overrides(sys.argv[1:])
        _hydra_main()
        if _FAILED_JOBS:
            lines = "\n".join(f"  {job}: {why}" for job, why in _FAILED_JOBS)
            print(f"\nxlt: error: {len(_FAILED_JOBS)} job(s) of the multirun failed:\n{lines}", file=sys.stderr)
            sys.exit(2)

    return _main
