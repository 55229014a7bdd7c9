"""The run-directory lock: one run of a directory at a time, shards of one stage side by side.

A holder owns ``<run>/locks/<name>.json`` (:attr:`xlt.run.layout.RunDir.locks`): the file's ``token``, new for
every acquisition, is its. The record also names the holder (host, boot id, PID namespace, PID, process
start time, launch id, SLURM job, command, start time) and its lease. An ordinary run takes the ``run``
lock and needs every other lock to be free; a sharded job (``translate.num_shards`` / ``eval.num_shards``
> 1) takes ``<stage>-shard<i>-of-<n>`` and needs only the ``run`` lock to be free, so the shards of a SLURM
array run together while a second plain run of the same directory stops, naming the holder.

**Never held twice.** A lock file is only ever created whole: the record is written to a temporary file
and hard-linked into place (``link`` fails when the name exists, like ``O_EXCL``), so no process ever sees
a half-written lock of this xlt. A stale lock is taken over in three steps, each atomic: rename it to a
name of the taker's own, check that the renamed file is the very one judged stale (same inode, same
bytes; otherwise it is put back), then create. After the create the taker reads the lock again and holds
it only when it finds its own token there. Of any number of contenders, one wins each step.

**Stale** (taken over, and the log says why) when

* its holder ran on this host (same host name, boot and PID namespace) and its PID is gone or belongs to
  a newer process;
* its holder is an earlier incarnation of this very SLURM job (same job, and array element, with a lower
  restart count): SLURM requeues a job only once its previous run has ended, on whichever node;
* otherwise (another host, another container) when the file has not changed for the holder's lease
  (``lease_s``, :data:`LEASE_S`) as seen on *this* process's monotonic clock. The holder rewrites it
  (``beat``, ``heartbeat``) every :func:`beat_interval` seconds, so a contender waits and watches:
  a change means the holder lives (the run stops, naming it); no change for a lease means it is gone.
  No host's wall clock is compared with another's.
* an empty or truncated file (what an older xlt left when killed between its create and its write)
  counts as stale once unchanged for a lease, with a warning; any other damage (not UTF-8, another
  shape, a folder) stops the run with the file and how to remove it.

**A holder that loses its lock stops.** The holder writes into the run directory only within
:data:`HOLD_FRACTION` of a lease since it last confirmed the lock was its own (a contender waits a whole
lease of silence, so a paused holder's right to write runs out before anyone may take over). Every write
through :mod:`xlt.run.files` and every training step calls :func:`check_held`, which reads the lock back and
raises :class:`LockLost` when the lock is gone or another's (naming the new holder and why it took over)
or renewal has failed for that long; the heartbeat thread interrupts the main thread when it finds the
same (``interrupt=True``, the entry points). One failed renewal (EIO, ESTALE, EACCES, ...) is logged and
retried. :meth:`RunLock.release` removes the lock only when it still holds this acquisition's token.

The ranks of one distributed launch share the lock: rank 0 takes it, the others check that it belongs
to their own launch, and their writes check that it still holds the token they joined.
"""

from __future__ import annotations

import _thread
import contextlib
import errno
import json
import logging
import os
import signal
import socket
import stat
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from xlt.errors import XltError
from xlt.run.files import BEFORE_WRITE, json_text
from xlt.run.layout import WHOLE_RUN, RunDir
from xlt.run.state import LOCK, check_schema

log = logging.getLogger("xlt.lock")

RUN_LOCK = WHOLE_RUN
RANK_WAIT_S = 120.0
DAMAGED_RECHECK_S = 1.0
# How long a lock holds without news from its holder, as a contender sees it on its own clock.
# A holder suspended for longer (SIGSTOP, a gang-scheduled job, an NFS stall) loses the lock and stops.
LEASE_S = float(os.environ.get("XLT_LOCK_LEASE_S", "600"))
# How long a contender watches a silent holder on another host before it gives up (default: the holder's
# whole lease, after which the lock is taken over). Shorter: the run stops at once, naming the holder.
WAIT_S = float(os.environ.get("XLT_LOCK_WAIT_S", "inf"))
HOLD_FRACTION = 0.75  # a holder writes only this part of a lease after its last confirmed renewal
BEAT_MAX_S = 10.0  # the heartbeat's longest interval (shorter leases: a quarter of the lease)
ABSENT_GRACE_S = 1.0  # a holder that finds no lock file looks again this long (another's takeover check)
TAKE_TRIES = 20
SLURM_KEYS = ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_RESTART_COUNT")


class RunLockedError(XltError):
    """Another live process holds the run directory."""


class LockLost(RunLockedError):
    """This process's lock of the run directory is gone or another's: the run must write nothing more."""


# What the run is doing now (stage, step): written into the lock record at every heartbeat (``xlt status``).
_PROGRESS: dict[str, Any] = {}


def report_progress(**fields: Any) -> None:
    """Update what this run is doing (``stage=``, ``step=``, ``max_steps=``); the next heartbeat writes it."""
    _PROGRESS.update(fields)


def stage_started(stage: str) -> float | None:
    """When this process started running ``stage`` (``report_progress(stage=..., since=...)``); None otherwise."""
    since = _PROGRESS.get("since")
    return float(since) if _PROGRESS.get("stage") == stage and isinstance(since, (int, float)) else None


def beat_interval(lease: float) -> float:
    """How often a holder rewrites its lock: a quarter of the lease, at most :data:`BEAT_MAX_S`."""
    return max(min(lease / 4, BEAT_MAX_S), 0.01)


def _read_first_line(path: str) -> str | None:
    try:
        return Path(path).read_text().strip() or None
    except OSError:
        return None


def _proc_start(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux), to tell a reused PID apart."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
        return stat_line.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
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


# Who this process's job is under any scheduler (xlt.cluster.backend's JobIdentity as a dict: scheduler, job_id,
# array_job_id, array_task_id, restart_count, host): the run layer asks no scheduler itself; the entry point
# installs the scheduler seam's reader (xlt.cli). Records keep it as "scheduler" (SLURM's also as "slurm", the
# field old run directories have).
_scheduler_reader: Callable[[], dict[str, Any] | None] | None = None


def read_scheduler_with(reader: Callable[[], dict[str, Any] | None] | None) -> None:
    """Install the function that tells this process's job (:func:`scheduler_identity`); None: none."""
    global _scheduler_reader
    _scheduler_reader = reader


def scheduler_identity() -> dict[str, Any] | None:
    """This process's job under whichever scheduler runs it (None outside one, or when no reader is installed)."""
    return _scheduler_reader() if _scheduler_reader is not None else None


def _same_job(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(a.get(k) == b.get(k) for k in ("job_id", "array_job_id", "array_task_id"))


def _count(job: dict[str, Any]) -> int:
    try:
        return int(job.get("restart_count", 0))
    except (TypeError, ValueError):
        return 0


def _same_machine(info: dict[str, Any]) -> bool:
    """Whether the holder's PID can be checked here: same host name, and (where recorded) same boot and PID
    namespace (containers on one host, each with its own PID 1, are not)."""
    if info.get("host") != socket.gethostname():
        return False
    boot = _read_first_line("/proc/sys/kernel/random/boot_id")
    for key, mine in (("boot_id", boot), ("pidns", _pid_namespace())):
        if info.get(key) is not None and mine is not None and info.get(key) != mine:
            return False
    return True


def holder_state(info: dict[str, Any]) -> tuple[bool | None, str]:
    """Whether the lock's holder is alive, told at once: True/False with the reason, or None when only
    watching its heartbeat can tell (a holder on another host or in another PID namespace)."""
    if _same_machine(info):
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
    mine, theirs = scheduler_identity(), info.get("scheduler")
    if mine and isinstance(theirs, dict) and mine.get("scheduler") == theirs.get("scheduler") != "slurm" \
            and _same_job(mine, theirs) and _count(theirs) < _count(mine):
        return False, (f"an earlier incarnation of this {mine['scheduler']} job {mine['job_id']} (restart "
                       f"{_count(theirs)}; this is restart {_count(mine)}): a job runs again only once that run "
                       "has ended")
    return None, "it runs on another host" if info.get("host") != socket.gethostname() else \
        "it runs in another container or boot of this host"


def _alive(info: dict[str, Any]) -> bool | None:
    """True/False when the holder's state is known at once (see :func:`holder_state`); None otherwise."""
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


def _token(info: dict[str, Any]) -> str:
    """The acquisition a lock record belongs to (an older xlt's record: its host, PID and start time)."""
    return str(info.get("token") or f"{info.get('host')}:{info.get('pid')}:{info.get('started')}")


def describe(info: dict[str, Any]) -> str:
    job = info.get("slurm") if isinstance(info.get("slurm"), dict) else None
    other = info.get("scheduler") if isinstance(info.get("scheduler"), dict) else None
    where = f"host {info.get('host')}, PID {info.get('pid')}"
    if job:
        task = f", array {job.get('array_job_id')}_{job.get('array_task_id')}" if job.get("array_task_id") else ""
        where += f", SLURM job {job.get('job_id')}{task} restart {job.get('restart_count', 0)}"
    elif other:
        task = f" task {other.get('array_task_id')}" if other.get("array_task_id") else ""
        where += f", {other.get('scheduler')} job {other.get('job_id')}{task} restart {other.get('restart_count', 0)}"
    beat = f", last heartbeat {_when(info.get('heartbeat'))} by its clock" if info.get("heartbeat") else ""
    return f"{where}, started {_when(info.get('started', 0))}{beat}: {info.get('command', '')}"


# --- the lock file ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """What one read of a lock file found: its bytes and inode, the record (None when damaged), why it is
    damaged, and whether the damage is what a kill between create and write leaves (empty, truncated)."""

    data: bytes
    ino: int
    info: dict[str, Any] | None
    damage: str | None = None
    partial: bool = False

    def same(self, other: Snapshot | None) -> bool:
        return other is not None and other.ino == self.ino and other.data == self.data


def _parse(data: bytes) -> tuple[dict[str, Any] | None, str | None, bool]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8", False
    body = text.strip()
    if not body:
        return None, "empty file", True
    try:
        value = json.loads(body)
    except (ValueError, RecursionError) as err:
        truncated = body.startswith("{") and not body.endswith("}")
        return None, f"not valid JSON ({getattr(err, 'msg', err)})" + (", cut short" if truncated else ""), truncated
    problem = check_schema(value, LOCK)
    if problem:
        return None, f"not the file xlt writes here: {problem}", False
    return value, None, False


def read_lock(path: Path) -> Snapshot | None:
    """One read of a lock file (None: there is none). OSErrors other than "absent" propagate."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno == errno.ELOOP:  # a symbolic link where the lock belongs
            return Snapshot(b"", -1, None, "a symbolic link where a lock file belongs")
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            return Snapshot(b"", st.st_ino, None, "a folder where a file belongs")
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    info, damage, partial = _parse(data)
    return Snapshot(data, st.st_ino, info, damage, partial)


def _write_temp(folder: Path, stem: str, data: bytes) -> Path:
    """``data`` in a new file of ``folder`` (flushed to disk), named for ``stem``."""
    path = folder / f".{stem}.{uuid.uuid4().hex}.tmp"
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)  # the umask decides, as for any file
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def _link_new(tmp: Path, path: Path) -> bool:
    """Put the complete file ``tmp`` at ``path`` unless something is there (False). ``link`` fails with
    EEXIST like ``O_EXCL``; on NFS a retried ``link`` may report an error although it succeeded, so the
    temporary file's link count decides. A file system without hard links: ``O_EXCL`` and a write."""
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    except OSError as err:
        if err.errno in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)  # the umask decides, as for any file
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as f:
                f.write(tmp.read_bytes())
                f.flush()
                os.fsync(f.fileno())
            return True
        with contextlib.suppress(OSError):
            if os.stat(tmp).st_nlink == 2:
                return True
        raise


# --- the lock --------------------------------------------------------------------------------------------

_REGISTRY: list[RunLock] = []
_REGISTRY_LOCK = threading.Lock()
_LAST_LOST: list[LockLost] = []
# Set by the heartbeat just before it interrupts the main thread for a lost lock (see _arm_interrupt).
_INTERRUPT_PENDING = threading.Event()


def _interrupt_if_lost(signum: int, frame: object) -> None:
    """SIGINT's handler where the process started with SIGINT ignored: the heartbeat's interrupt for a lost
    lock raises ``KeyboardInterrupt``; any other SIGINT stays ignored, as the process was started."""
    if _INTERRUPT_PENDING.is_set():
        _INTERRUPT_PENDING.clear()
        raise KeyboardInterrupt


def _arm_interrupt() -> None:
    """Make sure the heartbeat can interrupt the main thread. A process started in the background by a
    non-interactive shell (a batch script's ``"$@" &``: how shell/forward.sh starts xlt under every scheduler)
    inherits SIGINT ignored, and then ``_thread.interrupt_main`` does nothing: a run that lost its lock would
    go on writing. There a handler is installed that answers only the heartbeat (main thread only: Python
    sets handlers there)."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, _interrupt_if_lost)


def check_held(io: bool = True) -> None:
    """Raise :class:`LockLost` when a lock this process holds (or joined, ranks > 0) is no longer its own:
    call it before any write into a run directory. ``io=False``: only what is known without reading the
    lock (already lost, or not renewed for :data:`HOLD_FRACTION` of a lease). A process without a lock
    passes."""
    with _REGISTRY_LOCK:
        held = list(_REGISTRY)
    for lock in held:
        lock.check(io=io)


BEFORE_WRITE.append(check_held)


def lost_error() -> LockLost | None:
    """The last :class:`LockLost` of this process (kept after its lock was released), or None."""
    return _LAST_LOST[-1] if _LAST_LOST else None


class RunLock:
    """Context manager holding ``<run>/locks/<name>.json`` (see the module docstring).

    ``interrupt``: when the heartbeat finds the lock lost, interrupt the main thread (``KeyboardInterrupt``
    there; :func:`lost_error` tells it apart from Ctrl-C). The entry points set it."""

    def __init__(self, run_path: str | os.PathLike[str], name: str = RUN_LOCK, rank: int = 0,
                 interrupt: bool = False):
        self.dir = RunDir(run_path).locks
        self.name = name
        self.rank = rank
        self.interrupt = interrupt
        self.path = self.dir / f"{name}.json"
        self.held = False
        self.owner: str | None = None  # this acquisition's token (ranks > 0: rank 0's), shared by the launch's ranks
        self.record: dict[str, Any] = {}
        self.lost: LockLost | None = None
        self.lease = LEASE_S
        self._confirmed = 0.0  # monotonic time of the last check that found the lock ours
        self._mutex = threading.RLock()
        self._beating: threading.Event | None = None
        self._heart: threading.Thread | None = None
        self._failing: str | None = None

    # -- judging another's lock --

    def _damaged(self, path: Path, snap: Snapshot) -> RunLockedError:
        return RunLockedError(
            f"the lock {path} is damaged ({snap.damage}); it is not a lock xlt writes, so its holder cannot be "
            f"checked.\n  If no other xlt process is using {self.dir.parent}, remove it (rm -r '{path}') and rerun.")

    def _judge(self, path: Path, snap: Snapshot) -> tuple[str, Snapshot | None, str]:
        """("stale", the snapshot judged stale, why) / ("live", its snapshot, why) / ("gone", None, "")."""
        if snap.info is None and not snap.partial:
            time.sleep(DAMAGED_RECHECK_S)  # an older xlt may be writing it
            again = read_lock(path)
            if again is None:
                return "gone", None, ""
            if not snap.same(again) or again.info is not None or again.partial:
                return self._judge(path, again) if again.info is not None else ("live", again, "")
            raise self._damaged(path, again)
        if snap.info is not None:
            alive, why = holder_state(snap.info)
            if alive is not None:
                return ("live" if alive else "stale"), snap, why
            lease = snap.info.get("lease_s")
            if not isinstance(lease, (int, float)) or isinstance(lease, bool) or lease <= 0:
                return "live", snap, "its lock has no lease (an older xlt)"
            what = f"the holder ({describe(snap.info)})"
            mine, theirs = slurm_identity(), snap.info.get("slurm")
            if mine and isinstance(theirs, dict) and _same_job(mine, theirs):
                what += (f", this very SLURM job {mine['job_id']} at the same restart count {_count(mine)} (a requeue "
                         "whose environment lacks SLURM_RESTART_COUNT, e.g. --export=NONE or a container, or another "
                         "step of the job),")
        else:
            lease, what = LEASE_S, f"the {snap.damage} lock"
        log.warning("%s: %s shows no sign of life yet; watching it for up to %.0f s (a live holder rewrites it "
                    "every %.0f s). If you know its job is dead: rm '%s'", path, what, lease,
                    beat_interval(lease), path)
        began = time.monotonic()
        deadline = began + float(lease)
        poll = max(min(float(lease) / 16, 1.0), 0.005)
        while (left := deadline - time.monotonic()) > 0:
            if time.monotonic() - began >= WAIT_S:
                return "live", snap, (f"no change seen in {WAIT_S:g} s (XLT_LOCK_WAIT_S), less than its lease: its "
                                      "holder may be alive")
            time.sleep(min(poll, left, max(WAIT_S, 0.0)))
            now = read_lock(path)
            if now is None:
                return "gone", None, ""
            if not snap.same(now):
                return "live", now, "its lock changed while this run watched it: its holder is alive"
        if snap.info is None:
            return "stale", snap, (f"{snap.damage}, unchanged for {lease:g} s: what a kill between creating and "
                                   "writing a lock leaves")
        return "stale", snap, f"its lock did not change for its lease of {lease:g} s (watched on this host's clock)"

    def _remove(self, path: Path, snap: Snapshot) -> bool:
        """Remove ``path`` if it still is ``snap`` (rename it aside, compare, put back what is not)."""
        aside = path.with_name(f".{path.name}.{self.owner or uuid.uuid4().hex}.aside")
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            return False
        moved = read_lock(aside)
        if snap.same(moved):
            aside.unlink(missing_ok=True)
            return True
        try:  # another process's newer lock: put it back
            os.link(aside, path)
        except FileExistsError:
            log.warning("a lock %s was created while another was being checked; the newer one stays", path)
        aside.unlink(missing_ok=True)
        return False

    def _refuse(self, path: Path, snap: Snapshot | None, why: str = "") -> RunLockedError:
        info = snap.info if snap is not None else None
        if snap is not None and info is None:
            return RunLockedError(f"the lock {path} is {snap.damage} and changing: another xlt process is writing "
                                  f"it. Wait for it to finish, or give this run its own directory.")
        holder = describe(info) if info else "a process that is starting"
        hint = ""
        if info and _alive(info) is None:
            job = info.get("slurm") if isinstance(info.get("slurm"), dict) else None
            check = f" (squeue -j {job.get('job_id')} shows whether it runs)" if job else ""
            lease = info.get("lease_s")
            lease = (f"it is taken over once its lock stays unchanged for its lease of {lease:g} s"
                     if isinstance(lease, (int, float)) else "its lock has no lease (an older xlt)")
            hint = (f"\n  The holder runs on another host; {lease}. If that job is dead{check}, release the lock "
                    f"with:\n    rm '{path}'\n  and rerun.")
        return RunLockedError(
            f"the run directory {self.dir.parent} is in use by another xlt process ({holder}"
            f"{'; ' + why if why else ''}).\n"
            f"  Wait for it to finish, or give this run its own directory (other overrides or run_root=...).{hint}")

    def _conflicts(self) -> list[tuple[Path, Snapshot, str]]:
        """Live locks that this one may not coexist with (stale ones are removed on the way)."""
        out = []
        for path in sorted(self.dir.glob("*.json")):
            if path == self.path:
                continue
            if self.name != RUN_LOCK and path.stem != RUN_LOCK:
                continue  # shards of a stage run side by side
            snap = read_lock(path)
            while snap is not None:
                verdict, judged, why = self._judge(path, snap)
                if verdict == "live":
                    out.append((path, judged, why))
                    break
                if verdict == "stale":
                    log.warning("removing the stale lock %s (%s; holder: %s)", path, why,
                                describe(judged.info) if judged.info else judged.damage)
                    if self._remove(path, judged):
                        break
                snap = read_lock(path)
        return out

    # -- taking, holding, releasing --

    def acquire(self) -> RunLock:
        if self.interrupt:
            _arm_interrupt()
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
        except OSError as err:  # a full disk, a failing file system: no lock is left behind
            if self.held:
                self.release()
            with contextlib.suppress(OSError):
                snap = read_lock(self.path)
                if snap is not None and snap.info is not None and _token(snap.info) == self.owner:
                    self._remove(self.path, snap)
            raise RunLockedError(f"cannot take the lock {self.path} ({err.strerror or err}); nothing was left in "
                                 f"{self.dir}: free some space or fix the file system, then rerun") from None

    def _take(self) -> RunLock:
        _LAST_LOST.clear()  # an earlier lock's loss (a job of the same multirun) is not this one's
        self.owner = uuid.uuid4().hex
        now = time.time()
        me = {"host": socket.gethostname(), "pid": os.getpid(), "proc_start": _proc_start(os.getpid()),
              "boot_id": _read_first_line("/proc/sys/kernel/random/boot_id"), "pidns": _pid_namespace(),
              "token": self.owner, "launch": launch_id(), "started": now, "command": " ".join(sys.argv[1:])[:500],
              "slurm": slurm_identity(), "lease_s": self.lease, "beat": 0, "heartbeat": now}
        if scheduler_identity() is not None:  # a key of its own only under a scheduler: records as before else
            me["scheduler"] = scheduler_identity()
        took_over: dict[str, str] | None = None
        last: tuple[Snapshot | None, str] = (None, "")
        for _ in range(TAKE_TRIES):
            record = {**me, "took_over": took_over} if took_over else me
            tmp = _write_temp(self.dir, self.path.name, (json_text(record) + "\n").encode())
            try:
                t0 = time.monotonic()
                created = _link_new(tmp, self.path)
                ino = os.stat(tmp).st_ino
            finally:
                tmp.unlink(missing_ok=True)
            snap = self._read_settled()  # after a create, verify: a contender may have moved it meanwhile
            if created and snap is not None and snap.ino == ino and snap.info and _token(snap.info) == self.owner:
                self.record, self._confirmed = record, t0
                break
            if snap is None:
                continue  # released meanwhile
            if snap.info is not None and _token(snap.info) == self.owner:  # ours, put back by another's check
                self.record, self._confirmed = record, t0
                break
            verdict, judged, why = self._judge(self.path, snap)
            if verdict == "live":
                raise self._refuse(self.path, judged, why) from None
            if verdict == "stale":
                holder = describe(judged.info) if judged.info else f"none: {judged.damage}"
                log.warning("taking over the stale lock %s (%s; holder: %s)", self.path, why, holder)
                if self._remove(self.path, judged):
                    took_over = {"holder": holder, "why": why}
            last = (judged, why)
        else:
            snap = last[0] or read_lock(self.path)
            raise self._refuse(self.path, snap, "it kept changing while this run tried to take it")
        self.held = True
        with _REGISTRY_LOCK:
            _REGISTRY.append(self)
        self._beating = threading.Event()
        self._heart = threading.Thread(target=self._heartbeat, name="xlt-lock-heartbeat", daemon=True)
        self._heart.start()
        try:
            conflicts = self._conflicts()
        except BaseException:
            self.release()
            raise
        if conflicts:
            self.release()
            raise self._refuse(*conflicts[0])
        return self

    def _lose(self, why: str, taker: dict[str, Any] | None = None) -> LockLost:
        """Record that the lock is lost (once) and return the error; interrupts the main thread if asked."""
        with self._mutex:
            if self.lost is not None:
                return self.lost
            quiet = time.monotonic() - self._confirmed
            who = ""
            if taker is not None:
                who = f" by {describe(taker)}"
                prior = taker.get("took_over") if isinstance(taker.get("took_over"), dict) else None
                if prior and prior.get("why"):
                    who += f", which judged this run's lock stale ({prior['why']})"
            self.lost = LockLost(
                f"this run lost its lock {self.path}{' ' if who else ''}{who.lstrip()}: {why}; this process had "
                f"last confirmed it {quiet:.1f} s earlier (lease {self.lease:g} s; a pause such as SIGSTOP, a "
                f"suspended job or a file-system stall longer than the lease lets another run take over). It "
                f"stopped writing into {self.dir.parent}; check that directory's other run before rerunning.")
            _LAST_LOST.append(self.lost)
        log.error("%s", self.lost)
        main = threading.main_thread()
        if self.interrupt and threading.current_thread() is not main:
            _INTERRUPT_PENDING.set()
            if callable(signal.getsignal(signal.SIGINT)) and main.ident is not None:
                signal.pthread_kill(main.ident, signal.SIGINT)  # a real signal also ends a sleep or a blocking call
            else:
                _thread.interrupt_main()
        return self.lost

    def _read_settled(self) -> Snapshot | None:
        """The lock file; when absent, looked at again for a moment (another's takeover check may have
        renamed it aside to compare it, and puts back what it did not judge stale)."""
        snap = read_lock(self.path)
        deadline = time.monotonic() + min(ABSENT_GRACE_S, self.lease / 8)
        while snap is None and time.monotonic() < deadline:
            time.sleep(0.01)
            snap = read_lock(self.path)
        return snap

    def _verify_current(self) -> Snapshot:
        """The lock file as it is now, when it is this acquisition's; else the lock is lost (raised)."""
        snap = self._read_settled()
        if snap is None:
            raise self._lose("the lock file was removed (by hand, or by a run that took it over and released it)")
        if snap.info is None or _token(snap.info) != self.owner:
            raise self._lose("another process holds it now" if snap.info else f"the lock file is {snap.damage}",
                             snap.info)
        return snap

    def renew(self) -> None:
        """Check that the lock is still this acquisition's and rewrite it (a new ``beat``); raises
        :class:`LockLost` when it is not, OSError when the file system fails (the caller retries)."""
        with self._mutex:
            if self.lost is not None:
                raise self.lost
            t0 = time.monotonic()
            record = {**self.record, "beat": int(self.record.get("beat", 0)) + 1, "heartbeat": time.time(),
                      "progress": dict(_PROGRESS)}
            tmp = _write_temp(self.dir, self.path.name, (json_text(record) + "\n").encode())
            try:
                if t0 - self._confirmed < HOLD_FRACTION * self.lease:
                    self._verify_current()
                    os.replace(tmp, self.path)  # no contender may have judged it stale yet: no gap
                    if time.monotonic() - self._confirmed >= self.lease:  # paused between the check and the rename
                        raise self._lose("this process was paused while renewing; another run may have taken the "
                                         "lock over meanwhile")
                else:  # late: take it back as a contender would, so that a takeover is never overwritten
                    self._reclaim(tmp)
                self.record, self._confirmed = record, t0
            finally:
                tmp.unlink(missing_ok=True)
            self._failing = None

    def _reclaim(self, tmp: Path) -> None:
        self._verify_current()  # another's lock is never renamed aside by its loser
        aside = self.path.with_name(f".{self.path.name}.{self.owner}.aside")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            self._verify_current()  # absent for good: lost
            return self._reclaim(tmp)
        moved = read_lock(aside)
        if moved is None or moved.info is None or _token(moved.info) != self.owner:
            with contextlib.suppress(FileExistsError):
                os.link(aside, self.path)
            aside.unlink(missing_ok=True)
            raise self._lose("another process holds it now", moved.info if moved else None)
        try:
            if not _link_new(tmp, self.path):
                taker = read_lock(self.path)
                raise self._lose("another process took it over", taker.info if taker else None)
        except OSError:
            with contextlib.suppress(OSError):
                os.link(aside, self.path)  # put the old one back; the next beat retries
            raise
        finally:
            aside.unlink(missing_ok=True)
        return None

    def check(self, io: bool = True) -> None:
        """See :func:`check_held`."""
        if self.lost is not None:
            raise self.lost
        if not self.held:
            return
        if self.rank > 0:
            if io:
                with contextlib.suppress(OSError):
                    self._verify_current()
            return
        if time.monotonic() - self._confirmed >= HOLD_FRACTION * self.lease:
            try:
                self.renew()
            except LockLost:
                raise
            except Exception as err:  # noqa: BLE001 - any failure to confirm the lock stops the writes
                raise self._lose(f"it could not be renewed for {HOLD_FRACTION:g} of its lease ({err})") from None
        elif io:
            with contextlib.suppress(OSError):  # unreadable for now: within the lease no one may take it over
                self._verify_current()

    def _heartbeat(self) -> None:
        """Renew every :func:`beat_interval` s while held; survive any one failure; stop the run when the
        lock is lost or renewal keeps failing for :data:`HOLD_FRACTION` of a lease."""
        while not self._beating.wait(beat_interval(self.lease)):
            try:
                self.renew()
            except LockLost:
                return
            except Exception as err:  # noqa: BLE001 - EIO, ESTALE, EACCES, a full disk, anything: retried
                why = f"{type(err).__name__}: {err}"
                if self._failing is None:
                    log.warning("could not renew the lock %s (%s); retrying every %.1f s", self.path, why,
                                beat_interval(self.lease))
                self._failing = why
                if time.monotonic() - self._confirmed >= HOLD_FRACTION * self.lease:
                    self._lose(f"renewing it kept failing for {HOLD_FRACTION:g} of its lease ({why})")
                    return

    def _join(self) -> RunLock:
        """Ranks > 0: wait for rank 0's lock and check it is this launch's."""
        deadline = time.monotonic() + RANK_WAIT_S
        while time.monotonic() < deadline:
            snap = read_lock(self.path)
            info = snap.info if snap is not None else None  # None: damaged or being written by rank 0
            if info and info.get("launch") == launch_id() and _alive(info) is not False:
                self.owner = _token(info)  # not a dead earlier launch's lock with the same rendezvous
                self.held = True
                with _REGISTRY_LOCK:
                    _REGISTRY.append(self)
                return self
            if info and _alive(info) is not False and info.get("launch") != launch_id():
                raise self._refuse(self.path, snap)
            time.sleep(0.2)
        raise RunLockedError(f"rank {self.rank}: rank 0 did not take the lock {self.path} within {RANK_WAIT_S:.0f} s")

    def release(self) -> None:
        """Stop the heartbeat and remove the lock if it is still this acquisition's (its token, not a PID)."""
        if getattr(self, "_beating", None) is not None:
            self._beating.set()
            self._heart.join(timeout=max(self.lease, 1.0))
            self._beating = None
        with _REGISTRY_LOCK:
            if self in _REGISTRY:
                _REGISTRY.remove(self)
        if self.held and self.rank == 0:
            with self._mutex, contextlib.suppress(OSError):
                snap = read_lock(self.path)
                if snap is not None and snap.info is not None and _token(snap.info) == self.owner:
                    self._remove(self.path, snap)
                elif self.lost is None:
                    log.warning("the lock %s is no longer this run's (%s); left as it is", self.path,
                                describe(snap.info) if snap is not None and snap.info else "none")
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
