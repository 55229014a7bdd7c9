"""The run lock is never held twice (xlt.run.lock): takeover races, a holder paused past its lease, I/O errors
in the heartbeat, clocks that disagree, empty or cut-short lock files, release in containers.

Holders run as real processes (``python -c`` with the xlt under test): one on "another host" has its
``socket.gethostname`` replaced (its PID cannot be checked from here, only its heartbeat watched), one
with a skewed clock has ``time.time`` shifted, a failing file system is an OSError(EIO) raised by the
lock's reader in the holder. A holder that loses its lock must stop before its next write (exit 3 here,
with the lock's error); its writer loop goes through xlt's atomic writers (:mod:`xlt.run.files`)."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import xlt
from xlt.run import lock as xlock
from xlt.run.files import atomic_write_json
from xlt.run.lock import RunLock, RunLockedError

ROOT = Path(xlt.__file__).resolve().parent.parent  # the xlt under test, also in the processes started here
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}

HOLDER = r"""
import errno, json, os, socket, sys, threading, time
from pathlib import Path
cfg = json.loads(sys.argv[1])
if cfg.get("host"):
    socket.gethostname = lambda: cfg["host"]
if cfg.get("skew"):
    _real_time = time.time
    time.time = lambda: _real_time() + cfg["skew"]
import xlt.run.lock as xlock
from xlt.run.files import atomic_write_json
xlock.LEASE_S = cfg["lease"]
armed = threading.Event()
if cfg.get("eio"):  # the lock's reader fails with EIO: once in the heartbeat, or every read once armed
    name = "read_lock" if hasattr(xlock, "read_lock") else "read_state"
    real, calls = getattr(xlock, name), []
    def failing(*args, **kwargs):
        beat = threading.current_thread().name == "xlt-lock-heartbeat"
        if (cfg["eio"] == "once" and beat and not calls) or (cfg["eio"] == "always" and armed.is_set()):
            calls.append(1)
            raise OSError(errno.EIO, "Input/output error (injected)")
        return real(*args, **kwargs)
    setattr(xlock, name, failing)
kw = {"interrupt": True} if "interrupt" in xlock.RunLock.__init__.__code__.co_varnames else {}
lock = xlock.RunLock(cfg["dir"], **kw).acquire()
out = Path(cfg["dir"]) / "out"
out.mkdir(exist_ok=True)
print("HELD", flush=True)
armed.set()
end, i = time.monotonic() + cfg["seconds"], 0
try:
    while time.monotonic() < end:
        if cfg.get("write"):
            atomic_write_json(out / f"{i:06d}.json", {"i": i})
            i += 1
        time.sleep(0.02)
except KeyboardInterrupt:
    print("STOPPED", getattr(xlock, "lost_error", lambda: None)(), flush=True)
    sys.exit(3)
except xlock.RunLockedError as err:
    print("STOPPED", err, flush=True)
    sys.exit(3)
lock.release()
print("DONE", flush=True)
"""


def _holder(folder: Path, sigint_ignored: bool = False, **cfg) -> subprocess.Popen:
    """A holder process of ``folder``'s lock; returns once it holds it (its first line, "HELD").
    ``sigint_ignored``: started with SIGINT ignored, as a non-interactive shell starts a background job."""
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, json.dumps({"dir": str(folder), **cfg})], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ignore)
    line = proc.stdout.readline()
    if line.strip() != "HELD":
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the holder did not take the lock: {line}{out}{err}")
    return proc


def _finish(proc: subprocess.Popen, timeout: float = 60) -> tuple[int, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return -9, out + err
    return proc.returncode, out + err


def _foreign(path: Path, **fields) -> dict:
    path.parent.mkdir(parents=True, exist_ok=True)
    info = {"host": "node-b", "pid": os.getpid(), "proc_start": "1", "token": "b" * 32, "launch": "node-b:1",
            "started": time.time(), "command": "+recipe=demo", "lease_s": 30.0, "heartbeat": time.time(),
            "slurm": {"job_id": "9001", "restart_count": "0"}, **fields}
    path.write_text(json.dumps(info))
    return info


def _take_when_free(folder: Path, tries: int = 40) -> RunLock:
    """The lock of ``folder``, tried every 0.25 s until it is given (xlt watches a silent holder for its lease
    within one try; an xlt that compares clocks refuses until the lease has passed)."""
    for _ in range(tries - 1):
        try:
            return RunLock(folder).acquire()
        except RunLockedError:
            time.sleep(0.25)
    return RunLock(folder).acquire()


# --- fast: one process ------------------------------------------------------------------------------------


@pytest.mark.parametrize("content,why", [(b"", "empty file"), (b'{"host": "node-17", "pid": 42, "lea', "cut short")],
                         ids=["empty", "cut-short"])
def test_an_empty_or_cut_short_lock_is_taken_over_once_unchanged_for_a_lease(tmp_path, monkeypatch, caplog,
                                                                              content, why):
    monkeypatch.setattr(xlock, "LEASE_S", 0.3)
    path = tmp_path / "locks" / "run.json"
    path.parent.mkdir()
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="xlt.lock"), RunLock(tmp_path) as held:
        assert json.loads(path.read_text())["token"] == held.owner
    assert why in caplog.text and "what a kill between creating and writing a lock leaves" in caplog.text
    assert f"rm '{path}'" in caplog.text  # while it watched: how to skip the wait
    assert not path.exists()


def test_a_lock_is_never_half_written(tmp_path, monkeypatch):
    """The record is written to a temporary file and linked into place: a failure before the link leaves
    no lock (here the link itself fails as a full disk would)."""
    def no_space(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "link", no_space)
    with pytest.raises(RunLockedError, match=r"cannot take the lock .*run.json \(No space left on device\); nothing "
                                             "was left"):
        RunLock(tmp_path).acquire()
    assert list((tmp_path / "locks").iterdir()) == []


def test_a_holder_whose_lock_is_taken_writes_nothing_more_and_its_release_keeps_the_new_lock(tmp_path):
    """A foreign record in place of the holder's (another container on another host: the same PID, 1 in
    containers) stops every write through xlt's writers, naming the new holder; release leaves it."""
    held = RunLock(tmp_path).acquire()
    try:
        atomic_write_json(tmp_path / "before.json", {"ok": 1})
        info = _foreign(held.path)
        with pytest.raises(RunLockedError, match=r"lost its lock .* by host node-b, PID \d+, SLURM job 9001"):
            atomic_write_json(tmp_path / "after.json", {"ok": 2})
        assert not (tmp_path / "after.json").exists()
    finally:
        held.release()
    assert json.loads(held.path.read_text())["token"] == info["token"]


def test_release_after_a_takeover_by_a_process_with_the_same_pid_keeps_the_new_lock(tmp_path):
    """In containers every job's PID may be 1: release compares this acquisition's token, not the PID."""
    held = RunLock(tmp_path).acquire()
    info = _foreign(held.path)  # a takeover by a process of another host with this very PID
    held.release()
    assert json.loads(held.path.read_text())["token"] == info["token"]


def test_a_lock_removed_by_hand_stops_the_holders_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(xlock, "ABSENT_GRACE_S", 0.05, raising=False)
    with RunLock(tmp_path) as held:
        held.path.unlink()
        with pytest.raises(RunLockedError, match="the lock file was removed"):
            atomic_write_json(tmp_path / "after.json", {"ok": 2})
    assert not (tmp_path / "after.json").exists() and not held.path.exists()


# --- real processes ----------------------------------------------------------------------------------------


@pytest.mark.slow  # two holder processes watched for a lease: about 6 s
def test_expiry_does_not_depend_on_the_holders_clock(tmp_path):
    """A live holder whose clock runs an hour behind is kept; a dead one whose clock runs an hour ahead is
    taken over after its lease (both on another host: only their heartbeats can be watched)."""
    behind = _holder(tmp_path / "behind", host="node-behind", skew=-3600.0, lease=1.0, seconds=60)
    ahead = _holder(tmp_path / "ahead", host="node-ahead", skew=3600.0, lease=1.0, seconds=60)
    try:
        ahead.kill()  # dead, its lock left behind
        ahead.wait()
        with pytest.raises(RunLockedError, match="host node-behind"):
            RunLock(tmp_path / "behind").acquire()
        with RunLock(tmp_path / "ahead") as held:
            assert json.loads(held.path.read_text())["took_over"]["holder"].startswith("host node-ahead")
    finally:
        behind.kill()
        behind.wait()


@pytest.mark.slow  # a holder SIGSTOPped past its 2 s lease: about 8 s
def test_a_holder_paused_past_its_lease_stops_without_writing_after_the_takeover(tmp_path):
    holder = _holder(tmp_path, host="node-a", lease=2.0, seconds=60, write=True)
    out = tmp_path / "out"
    try:
        while len(list(out.glob("*.json"))) < 5:
            time.sleep(0.02)
        holder.send_signal(signal.SIGSTOP)
        taker = _take_when_free(tmp_path)  # the frozen holder's lock, unchanged for its lease, is taken over
        try:
            written = sorted(p.name for p in out.glob("*.json"))
            holder.send_signal(signal.SIGCONT)
            code, text = _finish(holder, timeout=30)
            assert code == 3, text
            assert f"by host {socket.gethostname()}, PID {os.getpid()}" in text
            assert "which judged this run's lock stale (its lock did not change for its lease of 2 s" in text
            assert sorted(p.name for p in out.glob("*.json")) == written  # no write after the takeover
            assert json.loads(taker.path.read_text())["token"] == taker.owner  # the holder's exit left it
        finally:
            taker.release()
    finally:
        if holder.poll() is None:
            holder.send_signal(signal.SIGCONT)
            holder.kill()
            holder.wait()


@pytest.mark.slow  # holder processes over a few leases of 1-2 s: about 6 s
def test_one_io_error_in_the_heartbeat_keeps_the_lease_and_lasting_ones_stop_the_run(tmp_path):
    once = _holder(tmp_path / "once", host="node-a", lease=2.0, seconds=6, eio="once")
    # No writes: only the heartbeat can find the failure, and it must interrupt the main thread.
    always = _holder(tmp_path / "always", host="node-c", lease=1.0, seconds=60, eio="always")
    try:
        time.sleep(2.5)  # the EIO came with the first beat (0.5 s); without the heartbeat the lease ran out
        with pytest.raises(RunLockedError, match="host node-a"):
            RunLock(tmp_path / "once").acquire()  # the holder is seen alive: its lease was renewed
        code, text = _finish(always, timeout=30)
        assert code == 3 and "STOPPED" in text and "renewing it kept failing for 0.75 of its lease" in text, text
        assert "Input/output error (injected)" in text
        code, text = _finish(once)
        assert code == 0 and "DONE" in text and "could not renew the lock" in text, text
    finally:
        for proc in (once, always):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


CONTENDERS = r"""
import json, multiprocessing as mp, os, socket, sys, time
import xlt.run.lock as xlock
xlock.LEASE_S = 60.0
folder, n, trials = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
locks = os.path.join(folder, "locks")
path = os.path.join(locks, "run.json")

def stale():  # a lock of this host whose PID now belongs to another process: stale at once
    os.makedirs(locks, exist_ok=True)
    for name in os.listdir(locks):
        os.unlink(os.path.join(locks, name))
    rec = {"host": socket.gethostname(), "pid": os.getpid(), "proc_start": "1", "started": 0.0, "token": "stale",
           "command": "the stale holder", "lease_s": 60.0}
    with open(path + ".new", "w") as f:
        json.dump(rec, f)
    os.replace(path + ".new", path)

def worker(i, start, mid, end, done, q):
    for t in range(trials):
        start.wait()
        lock = xlock.RunLock(folder)
        try:
            lock.acquire()
            got = True
        except xlock.RunLockedError:
            got = False
        mid.wait()  # every contender has tried: who holds it now?
        held = got
        if got and hasattr(lock, "check"):
            try:
                lock.check()
            except xlock.RunLockedError:
                held = False
        q.put((t, i, got, held))
        end.wait()
        if got:
            lock.release()
        done.wait()

if __name__ == "__main__":
    ctx = mp.get_context("fork")
    start, mid, end, done = (ctx.Barrier(n + 1) for _ in range(4))
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(i, start, mid, end, done, q)) for i in range(n)]
    for p in procs:
        p.start()
    began = time.monotonic()
    counts = []
    for t in range(trials):
        stale()
        start.wait()
        mid.wait()
        rows = [q.get() for _ in range(n)]
        counts.append([sum(r[3] for r in rows), sum(r[2] for r in rows)])
        end.wait()
        done.wait()
    for p in procs:
        p.join()
    print(json.dumps({"counts": counts, "seconds": time.monotonic() - began}))
"""


@pytest.mark.slow  # 200 trials of 6 processes: see the measured time in docs/run-directory.md
def test_simultaneous_contenders_on_a_stale_lock_exactly_one_holds_it(tmp_path):
    proc = subprocess.run([sys.executable, "-c", CONTENDERS, str(tmp_path), "6", "200"], env=ENV,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    holders = [held for held, _ in result["counts"]]
    print(f"holders per trial: {sorted(set(holders))}; acquire() returned "
          f"{sum(got for _, got in result['counts'])} times; {result['seconds']:.1f} s")
    assert holders == [1] * 200, [(t, c) for t, c in enumerate(result["counts"]) if c[0] != 1][:10]


def _files(run: Path) -> dict[str, tuple[int, int]]:
    """Every file of a run directory but its log and locks: (inode, mtime) by path."""
    return {str(p.relative_to(run)): (p.stat().st_ino, p.stat().st_mtime_ns) for p in run.rglob("*")
            if p.is_file() and p.name != "xlt.log" and "locks" not in p.relative_to(run).parts}


@pytest.mark.slow  # holder processes over a few leases of 1 s: about 5 s
def test_a_holder_started_with_sigint_ignored_is_still_stopped_when_its_lock_is_lost(tmp_path):
    """xlt's batch scripts start it as a background job of a non-interactive shell (shell/forward.sh and slurm/common.sh: ``"$@" &``),
    which ignores SIGINT; there ``_thread.interrupt_main`` does nothing, and a run that lost its lock went on
    writing (seen as a holder that never stopped). The heartbeat still stops it, and a SIGINT from outside stays
    ignored, as the process was started."""
    calm = _holder(tmp_path / "calm", sigint_ignored=True, host="node-a", lease=1.0, seconds=3)
    always = _holder(tmp_path / "always", sigint_ignored=True, host="node-c", lease=1.0, seconds=60, eio="always")
    try:
        calm.send_signal(signal.SIGINT)
        code, text = _finish(calm, timeout=30)
        assert code == 0 and "DONE" in text, text
        code, text = _finish(always, timeout=30)
        assert code == 3 and "STOPPED" in text and "renewing it kept failing" in text, text
    finally:
        for proc in (calm, always):
            if proc.poll() is None:
                proc.kill()


def _training_step(lock: Path) -> int:
    """The training step the lock's holder last reported (0 before its training loop)."""
    snap = xlock.read_lock(lock) if lock.exists() else None
    progress = ((snap.info or {}).get("progress") or {}) if snap else {}
    return (progress.get("step") or 0) if progress.get("stage") == "train" else 0


@pytest.mark.slow  # a CLI run of demo_tiny, stopped early: about 30 s
def test_a_cli_run_whose_lock_is_taken_over_stops_with_an_error_naming_the_new_holder(tmp_path):
    from tests.cli import start

    run = tmp_path / "demo_tiny" / "default"
    proc = start("xlt.train", "+recipe=demo_tiny", f"run_root={tmp_path}", log=tmp_path / "out.log",
                 env={"XLT_LOCK_LEASE_S": "2", "PYTHONPATH": str(ROOT)})
    try:
        lock = run / "locks" / "run.json"
        # The takeover once the training loop is under way (a step in the lock's progress): before it, the stage
        # tokenizes, and datasets' cache files (not xlt's writers) could land in the moment between the takeover
        # and the heartbeat that sees it (seen once in CI's slow tier, under load).
        while _training_step(lock) < 1:
            assert proc.poll() is None, (tmp_path / "out.log").read_text()[-3000:]
            time.sleep(0.05)
        tmp = lock.with_name("taker.tmp")
        tmp.write_text(json.dumps({"host": "node-b", "pid": 77, "token": "b" * 32, "lease_s": 2.0, "started": 0.0,
                                   "heartbeat": 0.0, "command": "+recipe=demo_tiny (the taker)",
                                   "slurm": {"job_id": "9002", "restart_count": "0"}}))
        tmp.replace(lock)  # the takeover
        before = _files(run)
        code = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = (tmp_path / "out.log").read_text()
    assert code == 2 and "Traceback" not in text, text[-3000:]
    assert "xlt: error: this run lost its lock" in text and "by host node-b, PID 77, SLURM job 9002" in text
    assert _files(run) == before  # nothing written (not even failed.json), replaced or touched after the takeover
    assert json.loads(lock.read_text())["token"] == "b" * 32  # left to the taker


def test_a_holder_past_its_right_to_write_takes_its_own_lock_back_before_writing(tmp_path, monkeypatch):
    """After a pause past 3/4 of its lease (the monotonic time of its last confirmation moved back here), a
    holder's next write first renews the lock as a contender would (rename aside, compare, link): its own lock,
    still there, is renewed and the write goes on; another's stops it."""
    monkeypatch.setattr(xlock, "LEASE_S", 30.0)
    with RunLock(tmp_path) as held:
        beat = json.loads(held.path.read_text())["beat"]
        held._confirmed -= 25.0
        atomic_write_json(tmp_path / "after-pause.json", {"ok": 1})
        renewed = json.loads(held.path.read_text())
        assert renewed["token"] == held.owner and renewed["beat"] == beat + 1
        held._confirmed -= 25.0
        _foreign(held.path)
        with pytest.raises(RunLockedError, match="lost its lock .* by host node-b"):
            atomic_write_json(tmp_path / "after-takeover.json", {"ok": 2})
    assert not (tmp_path / "after-takeover.json").exists()
    assert json.loads(held.path.read_text())["host"] == "node-b"
    assert sorted(p.name for p in held.path.parent.iterdir()) == ["run.json"]  # nothing left aside
