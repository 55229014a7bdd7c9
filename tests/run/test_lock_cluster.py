"""The run-directory lock on a cluster (xlt.run.lock): the holder's SLURM identity and a lease.

A requeued SLURM job usually lands on another node: its lock, left by the incarnation that was killed,
names another host, whose processes cannot be checked from here. The lock records the holder's SLURM job
(and array element, restart count) and a lease: the holder rewrites the lock while it lives, and a
contender takes it over only once it has seen no change for the lease on its own clock. The locks below
are written as a holder on another host writes them (its host name, its SLURM variables); a "live" one is
rewritten by a thread of the test, as a live holder's heartbeat would."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time

import pytest

from xlt.run import lock as xlock
from xlt.run.lock import RunLock, RunLockedError

OTHER_HOST = "node-17"
SLURM_KEYS = ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_RESTART_COUNT")


def _holder(tmp_path, **fields) -> tuple:
    path = tmp_path / "locks" / "run.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    now = time.time()
    info = {"host": OTHER_HOST, "pid": 4242, "proc_start": "123", "launch": "node-17:4242", "started": now - 60,
            "command": "+recipe=demo", "lease_s": 600.0, "heartbeat": now - 10, "expires": now + 590, **fields}
    path.write_text(json.dumps(info))
    return path, info


@contextlib.contextmanager
def _beating(path, info: dict, every: float = 0.05):
    """A live holder on another host: its lock rewritten (``beat``, ``heartbeat``) every ``every`` s."""
    stop = threading.Event()

    def beat() -> None:
        n = 0
        while not stop.wait(every):
            n += 1
            tmp = path.with_name(".beat.tmp")  # replaced whole, as xlt's holder does
            tmp.write_text(json.dumps({**info, "beat": n, "heartbeat": time.time()}))
            tmp.replace(path)

    t = threading.Thread(target=beat, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()


def _slurm(monkeypatch, job: str, restart: str | None, array: tuple[str, str] | None = ("555", "3")) -> None:
    """The variables SLURM sets in a job (SLURM_RESTART_COUNT only from the first requeue on)."""
    for key in SLURM_KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("SLURM_JOB_ID", job)
    if array:
        monkeypatch.setenv("SLURM_ARRAY_JOB_ID", array[0])
        monkeypatch.setenv("SLURM_ARRAY_TASK_ID", array[1])
    if restart is not None:
        monkeypatch.setenv("SLURM_RESTART_COUNT", restart)


def test_a_requeued_job_takes_over_its_predecessors_lock_on_another_host(tmp_path, monkeypatch, caplog):
    path, _ = _holder(tmp_path, slurm={"job_id": "558", "array_job_id": "555", "array_task_id": "3",
                                       "restart_count": "0"})
    _slurm(monkeypatch, "558", "1")
    with caplog.at_level(logging.WARNING, logger="xlt.lock"), RunLock(tmp_path) as held:
        info = json.loads(path.read_text())
        assert info["pid"] != 4242 and info["slurm"]["restart_count"] == "1" and held.held
    assert "an earlier incarnation of this SLURM job 558 (restart 0; this is restart 1)" in caplog.text
    assert not path.exists()


@pytest.mark.parametrize("mine", [("558", "0", ("555", "3")), ("559", "1", ("555", "4")), ("777", "1", None)],
                         ids=["same-restart", "another-array-element", "another-job"])
def test_a_live_holder_on_another_host_that_is_not_this_jobs_predecessor_is_kept(tmp_path, monkeypatch, mine):
    path, info = _holder(tmp_path, lease_s=30.0, slurm={"job_id": "558", "array_job_id": "555",
                                                        "array_task_id": "3", "restart_count": "0"})
    _slurm(monkeypatch, *mine)
    with _beating(path, info), pytest.raises(RunLockedError) as err:
        RunLock(tmp_path).acquire()
    msg = str(err.value)
    assert f"host {OTHER_HOST}, PID 4242, SLURM job 558, array 555_3 restart 0" in msg
    assert "squeue -j 558" in msg and f"rm '{path}'" in msg and "its lease of 30 s" in msg
    assert "changed while this run watched it" in msg
    assert json.loads(path.read_text())["pid"] == 4242  # kept


def test_a_holder_on_another_host_whose_lock_stays_unchanged_for_its_lease_is_taken_over(tmp_path, monkeypatch,
                                                                                         caplog):
    path, _ = _holder(tmp_path, lease_s=0.3)  # its wall clock says nothing: "expires" is in the future
    for key in SLURM_KEYS:
        monkeypatch.delenv(key, raising=False)
    with caplog.at_level(logging.WARNING, logger="xlt.lock"), RunLock(tmp_path) as held:
        info = json.loads(path.read_text())
        assert info["host"] != OTHER_HOST and info["took_over"]["holder"].startswith(f"host {OTHER_HOST}, PID 4242")
        assert held.held
    assert "did not change for its lease of 0.3 s (watched on this host's clock)" in caplog.text


def test_a_lock_without_a_lease_on_another_host_names_the_command_to_release_it(tmp_path, monkeypatch):
    path, _ = _holder(tmp_path)
    info = json.loads(path.read_text())
    for key in ("lease_s", "heartbeat", "expires"):  # written by an xlt before leases
        del info[key]
    path.write_text(json.dumps(info))
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with pytest.raises(RunLockedError, match=r"has no lease \(an older xlt\)\. If that job is dead, release the lock "
                                             rf"with:\n    rm '{path}'"):
        RunLock(tmp_path).acquire()


def test_the_holder_renews_its_lease_while_it_holds_the_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(xlock, "LEASE_S", 0.4)  # renewed every 0.1 s
    _slurm(monkeypatch, "901", None, array=None)
    with RunLock(tmp_path) as held:
        first = json.loads(held.path.read_text())
        assert first["slurm"] == {"job_id": "901", "restart_count": "0"} and first["lease_s"] == 0.4
        deadline = time.time() + 30
        while json.loads(held.path.read_text())["beat"] == first["beat"]:
            assert time.time() < deadline, "no heartbeat"
            time.sleep(0.05)
        renewed = json.loads(held.path.read_text())
        assert renewed["beat"] > first["beat"] and renewed["heartbeat"] >= first["heartbeat"]
        assert renewed["token"] == first["token"] == held.owner and renewed["started"] == first["started"]
    assert not held.path.exists()  # released, and the heartbeat stopped with it
    time.sleep(0.3)
    assert not held.path.exists()


def test_a_silent_holder_is_watched_no_longer_than_xlt_lock_wait_s(tmp_path, monkeypatch):
    path, _ = _holder(tmp_path, lease_s=30.0)
    monkeypatch.setattr(xlock, "WAIT_S", 0.2)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with pytest.raises(RunLockedError) as err:
        RunLock(tmp_path).acquire()
    msg = str(err.value)
    assert "no change seen in 0.2 s (XLT_LOCK_WAIT_S), less than its lease" in msg and f"rm '{path}'" in msg
    assert json.loads(path.read_text())["pid"] == 4242  # kept


def test_a_requeue_without_its_restart_count_takes_over_after_its_predecessors_lease(tmp_path, monkeypatch, caplog):
    """SLURM_RESTART_COUNT missing (--export=NONE, a container): both incarnations count 0, so the earlier
    one cannot be told dead at once; its lock, silent for its lease, is taken over (not refused for good)."""
    path, _ = _holder(tmp_path, lease_s=0.3, slurm={"job_id": "558", "array_job_id": "555", "array_task_id": "3",
                                                    "restart_count": "0"})
    _slurm(monkeypatch, "558", None)
    with caplog.at_level(logging.WARNING, logger="xlt.lock"), RunLock(tmp_path) as held:
        assert json.loads(path.read_text())["token"] == held.owner
    assert "this very SLURM job 558 at the same restart count 0 (a requeue whose environment lacks " \
           "SLURM_RESTART_COUNT" in caplog.text
    assert "did not change for its lease of 0.3 s" in caplog.text
