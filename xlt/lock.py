"""The run-directory lock: one run of a directory at a time, shards of one stage side by side.

A holder writes ``<run>/locks/<name>.json`` (:attr:`xlt.run.RunDir.locks`; host, PID, process start time, launch id, start time,
command) with an exclusive create. An ordinary run takes the ``run`` lock and needs every other lock to be
free; a sharded job (``translate.num_shards`` / ``eval.num_shards`` > 1) takes ``<stage>-shard<i>-of-<n>`` and
needs only the ``run`` lock to be free, so the shards of a SLURM array run together while a second plain
run of the same directory stops at once, naming the holder.

The lock records its holder's scheduler identity (``SLURM_JOB_ID``, ``SLURM_ARRAY_JOB_ID`` /
``SLURM_ARRAY_TASK_ID``, ``SLURM_RESTART_COUNT``) and a lease: the holder rewrites ``heartbeat`` and
``expires`` every :data:`LEASE_S` / 4 seconds (a thread), so ``expires`` always states how long the lock
holds without news from its holder. A lock is stale (taken over, and the log says why) when

* its holder ran on this host and its PID is gone or belongs to a newer process;
* its holder is an earlier incarnation of this very SLURM job (same job, and array element, with a lower
  restart count): SLURM requeues a job only once its previous run has ended, on whichever node;
* its holder ran on another host and its lease expired (no heartbeat for :data:`LEASE_S` seconds).

Any other holder on another host is kept: the message names it (host, PID, SLURM job, last heartbeat)
and gives the exact command that releases the lock once that job is known to be dead. The ranks of one
distributed launch share the lock: rank 0 takes it, the others check that it belongs to their own launch.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from xlt.errors import XltError
from xlt.files import atomic_write_json
from xlt.run import RunDir
from xlt.state import LOCK, Damaged, read_state

log = logging.getLogger("xlt.lock")

RUN_LOCK = "run"
RANK_WAIT_S = 120.0
DAMAGED_RECHECK_S = 1.0
# How long a lock holds without a heartbeat from its holder (the holder renews it every LEASE_S / 4 s).
# A holder suspended for longer (SIGSTOP, a gang-scheduled job) loses the lock to a new run on another host.
LEASE_S = float(os.environ.get("XLT_LOCK_LEASE_S", "600"))
SLURM_KEYS = ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_RESTART_COUNT")


class RunLockedError(XltError):
    """Another live process holds the run directory."""


def _proc_start(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux), to tell a reused PID apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def slurm_identity(env: Any = None) -> dict[str, str] | None:
    """This process's SLURM job as SLURM sets it (None outside a SLURM job); the restart count is "0" before
    the first requeue (SLURM sets ``SLURM_RESTART_COUNT`` only from then on)."""
    env = os.environ if env is None else env
    if not env.get("SLURM_JOB_ID"):
        return None
    out = {k.lower().removeprefix("slurm_"): env[k] for k in SLURM_KEYS if env.get(k)}
    out.setdefault("restart_count", "0")
    return out


def _same_job(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(a.get(k) == b.get(k) for k in ("job_id", "array_job_id", "array_task_id"))


def _count(job: dict[str, Any]) -> int:
    try:
        return int(job.get("restart_count", 0))
    except (TypeError, ValueError):
        return 0


def holder_state(info: dict[str, Any], now: float | None = None) -> tuple[bool | None, str]:
    """Whether the lock's holder is alive: True/False with the reason, or None when it cannot be told (a
    holder on another host whose lease has not expired, or a lock without a lease)."""
    if info.get("host") == socket.gethostname():
        pid = int(info.get("pid", -1))
        if pid <= 0:
            return False, "no PID"
        try:
            os.kill(pid, 0)
        except (ProcessLookupError, OverflowError):  # a PID beyond the system's range: no such process
            return False, f"PID {pid} is gone"
        except PermissionError:
            pass
        start = info.get("proc_start")
        if start is None or _proc_start(pid) in (None, start):
            return True, "its process is running on this host"
        return False, f"PID {pid} now belongs to a newer process"
    mine, theirs = slurm_identity(), info.get("slurm")
    if mine and isinstance(theirs, dict) and _same_job(mine, theirs) and _count(theirs) < _count(mine):
        return False, (f"an earlier incarnation of this SLURM job {mine['job_id']} (restart {_count(theirs)}; this "
                       f"is restart {_count(mine)}): SLURM requeues a job only once that run has ended")
    expires = info.get("expires")
    if isinstance(expires, (int, float)) and not isinstance(expires, bool):
        now = time.time() if now is None else now
        if expires < now:
            return False, f"its lease expired {now - expires:.0f} s ago (no heartbeat since {_when(info.get('heartbeat'))})"
    return None, "it runs on another host"


def _alive(info: dict[str, Any]) -> bool | None:
    """True/False when the holder's state is known (see :func:`holder_state`); None when it cannot be told."""
    return holder_state(info)[0]


def _when(t: Any) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if isinstance(t, (int, float)) else "?"


def launch_id() -> str:
    """Identifies one (possibly multi-process) launch: shared by its ranks, different for the next one."""
    if "TORCHELASTIC_RUN_ID" in os.environ or "MASTER_PORT" in os.environ:
        return ":".join(os.environ.get(k, "") for k in ("TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT",
                                                          "TORCHELASTIC_RESTART_COUNT", "SLURM_JOB_ID",
                                                          "SLURM_RESTART_COUNT"))
    return f"{socket.gethostname()}:{os.getpid()}"


def _owner(info: dict[str, Any]) -> str:
    return f"{info.get('host')}:{info.get('pid')}:{info.get('started')}"


def describe(info: dict[str, Any]) -> str:
    job = info.get("slurm") if isinstance(info.get("slurm"), dict) else None
    where = f"host {info.get('host')}, PID {info.get('pid')}"
    if job:
        task = f", array {job.get('array_job_id')}_{job.get('array_task_id')}" if job.get("array_task_id") else ""
        where += f", SLURM job {job.get('job_id')}{task} restart {job.get('restart_count', 0)}"
    beat = f", last heartbeat {_when(info.get('heartbeat'))}" if info.get("heartbeat") else ""
    return f"{where}, started {_when(info.get('started', 0))}{beat}: {info.get('command', '')}"


class RunLock:
    """Context manager holding ``<run>/locks/<name>.json`` (see the module docstring)."""

    def __init__(self, run_path: str | os.PathLike[str], name: str = RUN_LOCK, rank: int = 0):
        self.dir = RunDir(run_path).locks
        self.name = name
        self.rank = rank
        self.path = self.dir / f"{name}.json"
        self.held = False
        self.owner: str | None = None
        self.record: dict[str, Any] = {}
        self._beating: threading.Event | None = None
        self._heart: threading.Thread | None = None  # rank 0's lock identity (host:pid:start), shared by the launch's ranks

    def _read(self, path: Path) -> dict[str, Any] | None:
        """The lock's holder; None when there is no lock. A lock that is not what xlt writes (empty,
        garbage, another shape, a folder) is re-read once after a moment (a holder may be writing it), then
        refused as damaged: the message names the file and how to remove it."""
        for attempt in range(2):
            try:
                return read_state(path, LOCK)
            except Damaged as err:
                if attempt == 0:
                    time.sleep(DAMAGED_RECHECK_S)
                    continue
                raise RunLockedError(
                    f"the lock {path} is damaged ({err.why}); it is not a lock xlt writes, so its holder cannot "
                    f"be checked.\n  If no other xlt process is using {self.dir.parent}, remove it "
                    f"(rm -r '{path}') and rerun.") from None
        return None  # pragma: no cover

    def _conflicts(self) -> list[tuple[Path, dict[str, Any]]]:
        """Live locks that this one may not coexist with (stale ones are removed on the way)."""
        out = []
        for path in sorted(self.dir.glob("*.json")):
            if path == self.path:
                continue
            if self.name != RUN_LOCK and path.stem != RUN_LOCK:
                continue  # shards of a stage run side by side
            info = self._read(path)
            if info is None:
                continue
            alive, why = holder_state(info)
            if alive is False:
                log.warning("removing the stale lock %s (%s; holder: %s)", path, why, describe(info))
                path.unlink(missing_ok=True)
                continue
            out.append((path, info))
        return out

    def _refuse(self, path: Path, info: dict[str, Any]) -> RunLockedError:
        holder = describe(info) if info else "a process that is starting"
        hint = ""
        if info and _alive(info) is None:
            job = info.get("slurm") if isinstance(info.get("slurm"), dict) else None
            check = f" (squeue -j {job.get('job_id')} shows whether it runs)" if job else ""
            lease = (f"its lease runs until {_when(info['expires'])}, after which it is taken over by itself"
                     if isinstance(info.get("expires"), (int, float)) else "its lock has no lease (an older xlt)")
            hint = (f"\n  The holder runs on another host; {lease}. If that job is dead{check}, release the lock "
                    f"with:\n    rm '{path}'\n  and rerun.")
        return RunLockedError(
            f"the run directory {self.dir.parent} is in use by another xlt process ({holder}).\n"
            f"  Wait for it to finish, or give this run its own directory (other overrides or run_root=...).{hint}"
        )

    def acquire(self) -> RunLock:
        if self.dir.exists() and not self.dir.is_dir():
            raise RunLockedError(f"{self.dir} is a file where xlt keeps its lock folder: remove it "
                                 f"(rm '{self.dir}') and rerun")
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            if self.rank > 0:
                return self._join()
            return self._take()
        except PermissionError as err:
            raise RunLockedError(f"cannot write the lock folder {self.dir} ({err.strerror}): make it writable "
                                 f"(chmod u+rwx '{self.dir}') or give this run another run_root") from None

    def _take(self) -> RunLock:
        now = time.time()
        me = {"host": socket.gethostname(), "pid": os.getpid(), "proc_start": _proc_start(os.getpid()),
              "launch": launch_id(), "started": now, "command": " ".join(sys.argv[1:])[:500],
              "slurm": slurm_identity(), "lease_s": LEASE_S, "heartbeat": now, "expires": now + LEASE_S}
        for _ in range(2):  # a second try after removing a stale lock of our own name
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                info = self._read(self.path)
                if info is None:  # released meanwhile
                    continue
                alive, why = holder_state(info)
                if alive is False:
                    log.warning("taking over the stale lock %s (%s; holder: %s)", self.path, why, describe(info))
                    self.path.unlink(missing_ok=True)
                    continue
                raise self._refuse(self.path, info) from None
            with os.fdopen(fd, "w") as f:
                json.dump(me, f)
            self.owner = _owner(me)
            self.record = me
            break
        else:  # pragma: no cover - only when another process keeps recreating the lock
            raise self._refuse(self.path, self._read(self.path) or {})  # noqa: RET503
        self.held = True
        conflicts = self._conflicts()
        if conflicts:
            self.release()
            raise self._refuse(*conflicts[0])
        self._beating = threading.Event()
        self._heart = threading.Thread(target=self._heartbeat, name="xlt-lock-heartbeat", daemon=True)
        self._heart.start()
        return self

    def _heartbeat(self) -> None:
        """Renew the lease every LEASE_S / 4 s while the lock is held (and still ours)."""
        while not self._beating.wait(max(LEASE_S / 4, 0.05)):
            try:
                info = read_state(self.path, LOCK)
            except Damaged:
                continue
            if not info or _owner(info) != self.owner:  # released, or taken over after our lease expired
                return
            now = time.time()
            self.record = {**self.record, "heartbeat": now, "expires": now + LEASE_S}
            try:
                atomic_write_json(self.path, self.record)
            except XltError as err:  # a full or read-only file system: the lease runs out, the run goes on
                log.warning("could not renew the lock's lease: %s", err)

    def _join(self) -> RunLock:
        """Ranks > 0: wait for rank 0's lock and check it is this launch's."""
        deadline = time.monotonic() + RANK_WAIT_S
        while time.monotonic() < deadline:
            try:
                info = read_state(self.path, LOCK)
            except Damaged:
                info = None  # being written by rank 0
            if info and info.get("launch") == launch_id() and _alive(info) is not False:
                self.owner = _owner(info)  # not a dead earlier launch's lock with the same rendezvous
                return self
            if info and _alive(info) is not False and info.get("launch") != launch_id():
                raise self._refuse(self.path, info)
            time.sleep(0.2)
        raise RunLockedError(f"rank {self.rank}: rank 0 did not take the lock {self.path} within {RANK_WAIT_S:.0f} s")

    def release(self) -> None:
        if getattr(self, "_beating", None) is not None:
            self._beating.set()
            self._heart.join()
            self._beating = None
        if self.held:
            try:
                info = read_state(self.path, LOCK)
            except Damaged:
                info = None
            if info and info.get("pid") == os.getpid():
                self.path.unlink(missing_ok=True)
            self.held = False

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class Sharded(Protocol):
    """A config section whose work is split between processes (``translate``, ``eval``)."""

    shard_index: int
    num_shards: int


def lock_name(translate: Sharded, eval_cfg: Sharded) -> str:
    """``run`` for an ordinary run; ``<stage>-shard<i>-of-<n>`` for a sharded translate/evaluate job (given the
    ``translate`` and ``eval`` sections)."""
    for stage, section in (("translate", translate), ("evaluate", eval_cfg)):
        if int(section.num_shards) > 1:
            return f"{stage}-shard{int(section.shard_index)}-of-{int(section.num_shards)}"
    return RUN_LOCK
