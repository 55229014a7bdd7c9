"""A real Grid Engine on this host for the tests: Debian's Son of Grid Engine 8.1.9 (``gridengine-master``,
``gridengine-exec``, ``gridengine-client``), configured as ``../shared/reference/stack-notes.md`` says and
brought up and down by :class:`GridEngine`.

Grid Engine keeps one cell per host (``$SGE_ROOT/$SGE_CELL``, ``/var/lib/gridengine/default``: Debian's package
creates it when installed with the preseed ``gridengine-common shared/gridengineconfig boolean true``); the
fixture makes it usable by a test, and each step is skipped when already done (idempotent):

* the host's names resolve alike for client and master (``<host> localhost`` in ``common/host_aliases``,
  ``<host>`` in ``common/act_qmaster``);
* ``sge_qmaster`` started (it answers after a few seconds), the host an execution and a submission host, the
  global configuration's ``min_uid``/``min_gid`` 0 (root's jobs are refused otherwise), the scheduler fast
  (``schedule_interval 0:0:1``, flushes at once: jobs start within a second or two);
* a queue ``all.q`` on the host with ``rerun TRUE`` (a job that exits 99 runs again), :data:`SLOTS` slots and
  no load thresholds (jobs are dispatched on a busy host too),
  then ``sge_execd``, and the queue's error state cleared.

:meth:`GridEngine.stop` deletes every job and stops the daemons it started (``qconf -ke``, ``qconf -km``).

Run by hand: ``python -m tests.cluster.gridengine up`` (prints the environment to use it), ``down``.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SGE_ROOT = "/var/lib/gridengine"
SGE_CELL = "default"
DAEMONS = ("sge_qmaster", "sge_execd")
CLIENTS = ("qsub", "qstat", "qconf", "qacct", "qdel", "qmod")
QUEUE = "all.q"
SLOTS = 4
# What the scheduler configuration is set to: jobs start within a second or two of being submitted or freed.
SCHED = {"schedule_interval": "0:0:1", "flush_submit_sec": "1", "flush_finish_sec": "1"}
# load_thresholds NONE: the template's np_load_avg=1.75 puts the queue in alarm state (no job is dispatched, a
# requeued one stays "Rq") while the host's load is high, as it is when CI runs the other tiers beside these tests.
QUEUE_FIELDS = {"rerun": "TRUE", "slots": str(SLOTS), "load_thresholds": "NONE"}


def missing() -> list[str]:
    """What a Grid Engine needs that is missing here (programs, the cell, root); empty: one can start."""
    out = [name for name in CLIENTS if not shutil.which(name)]
    out += [name for name in DAEMONS if not Path("/usr/sbin", name).exists()]
    if not Path(SGE_ROOT, SGE_CELL, "common", "bootstrap").exists():
        out.append(f"the cell {SGE_ROOT}/{SGE_CELL} (install gridengine-* with the preseed shared/gridengineconfig true)")
    return out + ([] if os.geteuid() == 0 else ["root (the daemons run as the admin user, started by root)"])


def environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """A user's environment for this cell: ``SGE_ROOT``/``SGE_CELL``, no variables of an enclosing job."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith(("SLURM_", "SBATCH_", "SRUN_")) and k not in ("JOB_ID", "SGE_TASK_ID", "RESTARTED")}
    env.update(SGE_ROOT=SGE_ROOT, SGE_CELL=SGE_CELL)
    return env


@dataclass
class GridEngine:
    """The host's Grid Engine cell, brought up for the tests; see the module docstring."""

    host: str = field(default_factory=socket.gethostname)
    started: list[str] = field(default_factory=list)  # the daemons this object started (stopped by stop())

    @property
    def env(self) -> dict[str, str]:
        return environment()

    @property
    def common(self) -> Path:
        return Path(SGE_ROOT, SGE_CELL, "common")

    # -- start and stop ---------------------------------------------------------------------------

    def start(self) -> GridEngine:
        problems = missing()
        if problems:
            raise RuntimeError(f"Grid Engine cannot start here: missing {', '.join(problems)}")
        self._names()
        if not self._answers():
            self._daemon("sge_qmaster")
            self._wait_for(self._answers, "sge_qmaster to answer", 60)
        self._configure()
        if not self._execd_alive():
            self._daemon("sge_execd")
        self._wait_for(self._queue_ready, f"the queue {QUEUE}@{self.host} to take jobs", 90)
        return self

    def stop(self) -> None:
        """Delete every job, then stop the daemons this object started (the others are left as they were)."""
        if self._answers():
            self.run("qdel", "-f", "-u", "*", check=False)
        if "sge_execd" in self.started:
            self.run("qconf", "-ke", self.host, check=False)
            self._wait_gone("sge_execd", 30)
        if "sge_qmaster" in self.started:
            self.run("qconf", "-km", check=False)
            self._wait_gone("sge_qmaster", 30)
        self.started.clear()

    def _names(self) -> None:
        """The host's names resolve alike for the clients and the master."""
        aliases = self.common / "host_aliases"
        line = f"{self.host} localhost"
        text = aliases.read_text() if aliases.exists() else ""
        if line not in text.splitlines():
            aliases.write_text(text + ("" if not text or text.endswith("\n") else "\n") + line + "\n")
        master = self.common / "act_qmaster"
        if not master.exists() or master.read_text().strip() != self.host:
            master.write_text(f"{self.host}\n")

    def _daemon(self, name: str) -> None:
        """Start a daemon (it puts itself in the background), as root with the cell's environment."""
        proc = subprocess.run([str(Path("/usr/sbin", name))], capture_output=True, text=True, env=self.env,
                              cwd="/", timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"{name}: status {proc.returncode}\n{proc.stdout}\n{proc.stderr}\n{self.logs()}")
        self.started.append(name)

    def _configure(self) -> None:
        if self.run("qconf", "-se", self.host, check=False).returncode != 0:
            self._from_file("-Ae", "exechost", f"hostname {self.host}\nload_scaling NONE\ncomplex_values NONE\n"
                            "user_lists NONE\nxuser_lists NONE\nprojects NONE\nxprojects NONE\n"
                            "usage_scaling NONE\nreport_variables NONE\n")
        if self.host not in self.run("qconf", "-ss", check=False).stdout.split():
            self.run("qconf", "-as", self.host)
        conf = self.run("qconf", "-sconf", "global").stdout
        wanted = {"min_uid": "0", "min_gid": "0"}
        if _fields(conf).items() & wanted.items() != wanted.items():
            self._from_file("-Mconf", "global", _set_fields(conf, wanted), named="global")
        sched = self.run("qconf", "-ssconf").stdout
        if _fields(sched).items() & SCHED.items() != SCHED.items():
            self._from_file("-Msconf", "sched", _set_fields(sched, SCHED))
        queue = self.run("qconf", "-sq", QUEUE, check=False)
        if queue.returncode != 0:
            template = self.run("qconf", "-sq").stdout
            # pe_list NONE: the template names parallel environments (make smp mpi) that a fresh cell may lack
            # ("Parallel environment "smp" does not exist"); the tests use none.
            self._from_file("-Aq", "queue", _set_fields(template, {"qname": QUEUE, **QUEUE_FIELDS,
                                                                   "hostlist": self.host, "pe_list": "NONE"}))
        else:
            have = _fields(queue.stdout)
            for key, value in (("hostlist", self.host), *QUEUE_FIELDS.items()):
                if have.get(key) != value:
                    self.run("qconf", "-rattr", "queue", key, value, QUEUE)  # -rattr: list values (NONE) too

    def _from_file(self, option: str, kind: str, text: str, named: str | None = None) -> None:
        with tempfile.TemporaryDirectory(prefix="xlt-sge-") as tmp:
            path = Path(tmp, named or kind)
            path.write_text(text)
            self.run("qconf", option, str(path))

    def _answers(self) -> bool:
        try:
            return self.run("qstat", "-u", "*", check=False, timeout=10).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def _execd_alive(self) -> bool:
        return bool(_pids("sge_execd"))

    def _queue_ready(self) -> bool:
        """The queue instance on this host is known (a load report came) and in no error/alarm state."""
        proc = self.run("qstat", "-f", "-q", f"{QUEUE}@{self.host}", check=False)
        for line in proc.stdout.splitlines():
            if line.startswith(f"{QUEUE}@"):
                words = line.split()
                states = words[5] if len(words) > 5 else ""
                if "E" in states:
                    self.run("qmod", "-cq", QUEUE, check=False)  # an error state left by an earlier run
                    return False
                return not any(s in states for s in "uadDsSC") and words[3] != "-NA-"
        return False

    def _wait_for(self, ready, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            time.sleep(0.5)
        raise RuntimeError(f"timed out waiting for {what}:\n{self.logs()}")

    def _wait_gone(self, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while _pids(name) and time.monotonic() < deadline:
            time.sleep(0.3)
        for pid in _pids(name):  # did not stop when asked
            os.kill(pid, signal.SIGKILL)

    def logs(self, tail: int = 15) -> str:
        out = []
        for path in sorted(Path("/var/spool/gridengine").glob("*/messages")) + \
                sorted(Path("/var/spool/gridengine/execd").glob("*/messages")):
            lines = path.read_text(errors="replace").splitlines()[-tail:]
            out.append(f"== {path}\n" + "\n".join(lines))
        try:  # the queue's states and why (alarm: which load over which threshold; error: which job left it)
            queue = self.run("qstat", "-f", "-explain", "aAcE", check=False, timeout=10)
            out.append("== qstat -f -explain aAcE\n" + queue.stdout + queue.stderr)
        except (OSError, subprocess.TimeoutExpired) as exc:
            out.append(f"== qstat -f: {exc}")
        return "\n".join(out)

    # -- using it ----------------------------------------------------------------------------------

    def run(self, *cmd: str, check: bool = True, cwd: Path | None = None, env: dict | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess:
        from tests.cluster.slurm import run_command

        return run_command(cmd, {**self.env, **(env or {})}, check=check, cwd=cwd, timeout=timeout)

    def qsub(self, *args: str, cwd: Path, env: dict | None = None) -> str:
        """Submit (``qsub -terse``); the job id (an array's id without its task range)."""
        out = self.run("qsub", "-terse", *args, cwd=cwd, env=env).stdout.strip()
        return out.split(".")[0]

    def running(self) -> dict[str, str]:
        """``JOB[.TASK]`` -> the state letters of every job ``qstat`` knows now (a pending range: each task)."""
        from xlt.cluster.gridengine import _qstat_rows

        out: dict[str, str] = {}
        for job, tasks, letters in _qstat_rows(self.run("qstat", "-u", "*", check=False).stdout):
            for key in [f"{job}.{t}" for t in tasks] or [job]:
                out[key] = letters
        return out

    def wait(self, job_id: str, timeout: float, every=None) -> None:
        """Wait until ``qstat`` no longer lists the job (every task ended); ``every(running)`` at each look."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            jobs = self.running()
            if every is not None:
                every(jobs)
            if not any(key.split(".")[0] == job_id for key in jobs):
                return
            time.sleep(0.5)
        raise TimeoutError(f"job {job_id}: still {self.running()} after {timeout:.0f} s\n{self.logs()}")

    def accounting(self, job_id: str, count: int = 1, timeout: float = 60) -> list[dict[str, str]]:
        """``qacct -j JOB``: one record per finished run of a task (a rerun adds one), waiting until there are
        ``count`` (qmaster writes the accounting file a few seconds after a job leaves qstat)."""
        from xlt.cluster.gridengine import qacct_records

        deadline = time.monotonic() + timeout
        while True:
            records = qacct_records(self.run("qacct", "-j", job_id, check=False).stdout)
            if len(records) >= count or time.monotonic() > deadline:
                return records
            time.sleep(1)


def _fields(text: str) -> dict[str, str]:
    """``key value`` lines of a qconf listing (continuation lines ending in ``\\`` joined)."""
    out: dict[str, str] = {}
    for line in text.replace("\\\n", " ").splitlines():
        key, _, value = line.strip().partition(" ")
        if key:
            out[key] = " ".join(value.split())
    return out


def _set_fields(text: str, values: dict[str, str]) -> str:
    """A qconf listing with ``values`` set (added when absent)."""
    have = _fields(text)
    have.update(values)
    return "".join(f"{k} {v}\n" for k, v in have.items())


def _pids(name: str) -> list[int]:
    """The processes whose command is ``name`` (Debian's wrappers exec ``/usr/lib/gridengine/<name>``)."""
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                comm = (proc / "comm").read_text().strip()
            except OSError:
                continue
            if comm == name:
                out.append(int(proc.name))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("up", "down"):
        print("usage: python tests/cluster/gridengine.py {up|down}", file=sys.stderr)
        return 2
    cell = GridEngine()
    if argv[0] == "up":
        cell.start()
        print(f"export SGE_ROOT={SGE_ROOT} SGE_CELL={SGE_CELL}")
        return 0
    cell.started = list(DAEMONS)
    cell.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
