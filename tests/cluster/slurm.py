"""A real SLURM cluster on this host for the tests: Debian's ``slurm-wlm`` and ``munge`` (and, where installed,
``slurmdbd`` on a MariaDB server of its own, so that ``sacct`` answers), in a state folder of its own, on free
ports, started and stopped by :class:`Cluster`.

The nodes declare what the sbatch scripts ask for (``SlurmdParameters=config_overrides``: 64 CPUs, 512 GB, eight
"GPUs" backed by device files such as ``/dev/null``), so xlt's scripts run unchanged, several jobs a node. Nodes ``n1`` and ``n2`` (two
``slurmd`` on this host, one port each) form the default partition ``main`` (the multi-node script runs one task
on each); nodes ``n3`` and ``n4`` carry the preemption partitions: ``low`` on n3 (``PriorityTier=1``,
``PreemptMode=REQUEUE``: SLURM 22.05 requeues the job at once, TERM then KILL after ``KillWait``) and
``lowcancel`` on n4 (``PreemptMode=CANCEL`` with a ``GraceTime``: the job is not requeued by SLURM), both under
``high`` (``PriorityTier=10``). ``send_user_signal=True`` starts the cluster with
``PreemptParameters=send_user_signal`` (SLURM >= 23.02; ``SchedulerParameters=preempt_send_user_signal`` before). The node names resolve through an ``/etc/hosts`` line (the multi-node
script's ``MASTER_ADDR``), added once and left (it names only loopback).

Run by hand: ``python tests/cluster/slurm.py up DIR`` starts one and prints the environment to use it
(``SLURM_CONF=...``); ``down DIR`` stops it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
NODES = ("n1", "n2", "n3", "n4", "n5", "n6", "n7")
# How long a requeued job waits before it may start again: SLURM holds it for the credential lifetime
# (AuthInfo cred_expire, default 120 s); the tests' cluster shortens it.
CRED_EXPIRE_S = 10
# A preemption's GraceTime well above KillWait, as on production clusters (KillWait 30 s by default, grace
# minutes): xlt must checkpoint within the grace, not in the KillWait after it. KillWait leaves a stopped
# command time to exit and the batch shell its verdict on this loaded 2-core test machine.
GRACE_S = 120
KILL_WAIT_S = 45


def missing() -> list[str]:
    """What this module needs that is missing here: programs not installed, root (the daemons run as root);
    empty: a cluster can start."""
    out = [name for name in (*DAEMONS, "sbatch", "scontrol", "squeue", "scancel")
           if not shutil.which(name) and not Path("/usr/sbin", name).exists()]
    return out + ([] if os.geteuid() == 0 else ["root (the daemons run as root)"])


def version() -> tuple[int, int]:
    """SLURM's version (``slurmctld -V``: ``slurm 22.05.8``)."""
    out = subprocess.run([_exe("slurmctld"), "-V"], capture_output=True, text=True).stdout
    found = re.search(r"(\d+)\.(\d+)", out)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def _exe(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ensure_hosts(names: tuple[str, ...]) -> None:
    """``/etc/hosts`` resolves the node names (to loopback), as a cluster's DNS would."""
    hosts = Path("/etc/hosts")
    text = hosts.read_text() if hosts.exists() else ""
    known = {word for line in text.splitlines() if not line.lstrip().startswith("#") for word in line.split()[1:]}
    if set(names) <= known:
        return
    with hosts.open("a") as f:
        f.write(f"\n127.0.0.1 {' '.join(n for n in names if n not in known)}  # xlt tests: SLURM nodes\n")


@dataclass
class Cluster:
    """One SLURM cluster in ``root``; see the module docstring."""

    root: Path
    send_user_signal: bool = False
    accounting: bool = True
    # CPU binding, as production clusters have it (task/affinity: each task bound to the CPUs it was given)
    task_plugin: str = "task/affinity"
    first_job_id: int = 1  # clusters side by side write their logs into one folder: ids apart
    ports: dict[str, int] = field(default_factory=dict)
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """The environment of a user of this cluster (``SLURM_CONF``; no variables of an enclosing job)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_"))}
        env["SLURM_CONF"] = str(self.conf)
        return env

    # -- start and stop ---------------------------------------------------------------------------

    def start(self) -> Cluster:
        for sub in ("etc", "state", "log", "run", "munge", "db"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        _ensure_hosts(NODES)
        self.ports = {name: free_port() for name in ("ctld", *NODES, "dbd", "db")}
        self._start_munge()
        self.has_accounting = self.accounting and bool(shutil.which("mariadbd") or Path("/usr/sbin/mariadbd").exists()) \
            and Path("/usr/sbin/slurmdbd").exists()
        if self.has_accounting:
            self._start_accounting()
        self._write_conf()
        self._spawn([_exe("slurmctld"), "-D", "-f", str(self.conf)], "slurmctld")
        self._wait_for(lambda: self.run("scontrol", "ping", check=False).returncode == 0, "slurmctld", 30)
        for node in NODES:
            self._spawn([_exe("slurmd"), "-D", "-N", node, "-f", str(self.conf)], f"slurmd-{node}")
        self._wait_for(self._nodes_idle, "the nodes to be idle", 60)
        return self

    def stop(self) -> None:
        if self.conf.exists():
            self.run("scancel", "--full", "--user=root", check=False)
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()

    def _spawn(self, cmd: list[str], name: str) -> subprocess.Popen:
        log = open(self.root / "log" / f"{name}.stdout", "ab")  # noqa: SIM115 - kept by the process
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        self.procs.append(proc)
        return proc

    def _wait_for(self, ready, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a daemon exited ({dead[0].args[0]}, status {dead[0].returncode}) while waiting "
                                   f"for {what}; logs in {self.root / 'log'}:\n{self.logs()}")
            if ready():
                return
            time.sleep(0.3)
        raise RuntimeError(f"timed out waiting for {what}; logs in {self.root / 'log'}:\n{self.logs()}")

    def logs(self, tail: int = 15) -> str:
        out = []
        for path in sorted((self.root / "log").glob("*")):
            lines = path.read_text(errors="replace").splitlines()[-tail:]
            out.append(f"== {path.name}\n" + "\n".join(lines))
        return "\n".join(out)

    def _nodes_idle(self) -> bool:
        proc = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False)
        states = dict(line.split()[:2] for line in proc.stdout.splitlines() if line.strip())
        return all(states.get(n, "").rstrip("*") in ("idle", "mix", "alloc") for n in NODES)

    def _start_munge(self) -> None:
        key = self.root / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self.root.chmod(0o755)
        (self.root / "munge").chmod(0o755)  # the socket is every user's (a second uid in the tests)
        self.munge_socket = self.root / "munge" / "munge.socket"
        self._spawn([_exe("munged"), "--foreground", "--force", f"--key-file={key}", f"--socket={self.munge_socket}",
                     f"--pid-file={self.root / 'munge' / 'munged.pid'}", f"--log-file={self.root / 'log' / 'munged.log'}",
                     f"--seed-file={self.root / 'munge' / 'munged.seed'}"], "munged")
        self._wait_for(self.munge_socket.exists, "munged", 15)

    def _start_accounting(self) -> None:
        db = self.root / "db"
        sock = db / "mysqld.sock"
        if not (db / "data" / "mysql").exists():
            subprocess.run(["mariadb-install-db", "--user=root", f"--datadir={db / 'data'}", "--auth-root-authentication-method=normal",
                            "--skip-test-db"], check=True, capture_output=True)
        self._spawn([_exe("mariadbd"), "--no-defaults", "--user=root", f"--datadir={db / 'data'}", f"--socket={sock}",
                     f"--port={self.ports['db']}", "--bind-address=127.0.0.1", f"--pid-file={db / 'mysqld.pid'}",
                     "--skip-log-bin", "--innodb-buffer-pool-size=32M", "--performance-schema=OFF"], "mariadbd")
        self._wait_for(sock.exists, "mariadbd", 60)
        dbd_conf = self.root / "etc" / "slurmdbd.conf"
        dbd_conf.write_text("\n".join([
            "AuthType=auth/munge", f"AuthInfo=socket={self.munge_socket}", "DbdHost=localhost", f"DbdPort={self.ports['dbd']}",
            "SlurmUser=root", f"PidFile={self.root / 'run' / 'slurmdbd.pid'}", f"LogFile={self.root / 'log' / 'slurmdbd.log'}",
            "StorageType=accounting_storage/mysql", "StorageHost=127.0.0.1", f"StoragePort={self.ports['db']}",
            f"StorageLoc=slurm_acct_{self.ports['dbd']}", "StorageUser=root", "DebugLevel=info", ""]))
        dbd_conf.chmod(0o600)
        # slurmdbd finds the database through the socket only when StorageHost is localhost: give it the socket.
        env = dict(self.env, SLURM_CONF=str(self.conf))
        log = open(self.root / "log" / "slurmdbd.stdout", "ab")  # noqa: SIM115
        self.procs.append(subprocess.Popen([_exe("slurmdbd"), "-D"], env=dict(env, SLURMDBD_CONF=str(dbd_conf)),
                                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        self._wait_for(lambda: _port_open(self.ports["dbd"]), "slurmdbd", 60)

    def _write_conf(self) -> None:
        host = socket.gethostname()
        r = self.root
        lines = [
            "ClusterName=xlt", f"FirstJobId={self.first_job_id}", f"SlurmctldHost={host}", f"SlurmctldPort={self.ports['ctld']}",
            "AuthType=auth/munge", f"AuthInfo=socket={self.munge_socket},cred_expire={CRED_EXPIRE_S}",
            "CredType=cred/munge", "SlurmUser=root", "SlurmdUser=root",
            f"StateSaveLocation={r / 'state'}", f"SlurmdSpoolDir={r / 'spool-%n'}",
            f"SlurmctldPidFile={r / 'run' / 'slurmctld.pid'}", f"SlurmdPidFile={r / 'run' / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={r / 'log' / 'slurmctld.log'}", f"SlurmdLogFile={r / 'log' / 'slurmd-%n.log'}",
            "ProctrackType=proctrack/linuxproc", f"TaskPlugin={self.task_plugin}", "MpiDefault=none",
            "JobAcctGatherType=jobacct_gather/linux", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core_Memory",
            "SchedulerType=sched/backfill", "DefMemPerCPU=4096", "SchedulerParameters=sched_interval=2,bf_interval=2",
            "SlurmdParameters=config_overrides", "GresTypes=gpu", "ReturnToService=2",
            "MinJobAge=3600", f"KillWait={KILL_WAIT_S}", "InactiveLimit=0", "SlurmctldTimeout=30", "SlurmdTimeout=60",
            "JobRequeue=1", "SlurmctldDebug=info", "SlurmdDebug=info",
            "PreemptType=preempt/partition_prio", "PreemptMode=REQUEUE",
        ]
        if self.send_user_signal:
            # SLURM 22.05 reads SlurmctldParameters=preempt_send_user_signal (node_scheduler.c _preempt_jobs:
            # slurm_conf.slurmctld_params); 23.02+ reads PreemptParameters=send_user_signal as well.
            lines.append("PreemptParameters=send_user_signal" if version() >= (23, 2)
                         else "SlurmctldParameters=preempt_send_user_signal")
        if self.has_accounting:
            lines += ["AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=localhost",
                      f"AccountingStoragePort={self.ports['dbd']}", "JobCompType=jobcomp/none",
                      # the munge socket of the connection to slurmdbd (its "password", slurm.conf(5))
                      f"AccountingStoragePass={self.munge_socket}"]
        else:
            lines += ["AccountingStorageType=accounting_storage/none"]
        for node in NODES:
            lines.append(f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 Port={self.ports[node]} CPUs=64 "
                         "RealMemory=524288 Gres=gpu:8 State=UNKNOWN")
        lines += [
            "PartitionName=main Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP PriorityTier=5 PreemptMode=OFF",
            # A GraceTime applies to every PreemptMode (preempt.c _job_check_grace_internal): TERM to the job's
            # steps only at its start (with send_user_signal: the job's own --signal instead), then SLURM
            # requeues (REQUEUE) or kills (CANCEL) the job at its end: TERM to every process, KILL after KillWait.
            f"PartitionName=low Nodes=n3 MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE GraceTime={GRACE_S}",
            f"PartitionName=lowcancel Nodes=n4 MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=CANCEL GraceTime={GRACE_S}",
            # no grace: SLURM requeues at once (TERM to every process of the job)
            "PartitionName=lownograce Nodes=n7 MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE",
            # two nodes for the multi-node script's preemption
            f"PartitionName=lowmulti Nodes=n5,n6 MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE GraceTime={GRACE_S}",
            "PartitionName=high Nodes=n3,n4,n5,n6,n7 MaxTime=INFINITE State=UP PriorityTier=10 PreemptMode=OFF",
        ]
        self.conf.write_text("\n".join(lines) + "\n")
        # Eight "GPUs" per node: one file each (gres.conf refuses a Count without files).
        (self.root / "dev").mkdir(exist_ok=True)
        devices = [self.root / "dev" / f"gpu{i}" for i in range(8)]
        for d in devices:
            d.touch()
        (self.conf.parent / "gres.conf").write_text("".join(f"Name=gpu File={d}\n" for d in devices))
        if self.has_accounting:
            (self.conf.parent / "slurmdbd.conf").chmod(0o600)
            # The cluster, an account and root's association, as an admin registers them.
            for args in (["add", "cluster", "xlt"], ["add", "account", "xlt", "Cluster=xlt"],
                         ["add", "user", "root", "Account=xlt", "Cluster=xlt"]):
                self._wait_for(lambda a=args: self.run("sacctmgr", "-i", *a, check=False).returncode == 0
                               or "Nothing new added" in self._last_sacctmgr(a), f"sacctmgr {' '.join(args)}", 30)

    def _last_sacctmgr(self, args: list[str]) -> str:
        proc = self.run("sacctmgr", "-i", *args, check=False)
        return proc.stdout + proc.stderr

    # -- using it ----------------------------------------------------------------------------------

    def run(self, *cmd: str, check: bool = True, cwd: Path | None = None, env: dict | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess:
        return run_command(cmd, {**self.env, **(env or {})}, check=check, cwd=cwd, timeout=timeout)

    def sbatch(self, *args: str, cwd: Path, env: dict | None = None) -> str:
        """Submit (``sbatch --parsable``); the job id."""
        return self.run("sbatch", "--parsable", *args, cwd=cwd, env=env).stdout.strip().split(";")[0]

    def job(self, job_id: str) -> dict[str, str]:
        """``scontrol show job -o`` of one job (or the first element of an array) as a dict; {} when unknown."""
        proc = self.run("scontrol", "show", "job", "-o", job_id, check=False)
        if proc.returncode != 0 or not proc.stdout.strip():
            return {}
        return parse_fields(proc.stdout.splitlines()[0])

    def jobs(self, job_id: str) -> list[dict[str, str]]:
        """Every record ``scontrol show job`` has for a job id (an array: one per element; "": every job)."""
        proc = self.run("scontrol", "show", "job", "-o", *([job_id] if job_id else []), check=False)
        return [parse_fields(line) for line in proc.stdout.splitlines() if line.strip()] if proc.returncode == 0 else []

    def states(self, job_id: str) -> dict[str, str]:
        """``JobId`` (``123_4`` for array elements) -> ``JobState``."""
        out = {}
        for rec in self.jobs(job_id):
            key = rec["JobId"] if "ArrayTaskId" not in rec else f"{rec['ArrayJobId']}_{rec['ArrayTaskId']}"
            out[key] = rec["JobState"]
        return out

    def wait(self, job_id: str, timeout: float, until=None) -> list[dict[str, str]]:
        """Wait until every record of ``job_id`` is in a final state (or ``until(records)`` is true)."""
        deadline = time.monotonic() + timeout
        final = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL",
                 "DEADLINE"}
        recs: list[dict[str, str]] = []
        while time.monotonic() < deadline:
            recs = self.jobs(job_id)
            if recs and (until(recs) if until else all(r["JobState"] in final for r in recs)):
                return recs
            time.sleep(1)
        raise TimeoutError(f"job {job_id}: still {[(r['JobId'], r['JobState'], r.get('Reason')) for r in recs]} "
                           f"after {timeout:.0f} s")


def run_command(cmd: tuple[str, ...] | list[str], env: dict, check: bool = True, cwd: Path | None = None,
                timeout: float = 60) -> subprocess.CompletedProcess:
    """One command of a test cluster's (SLURM's, Grid Engine's), its output captured; a failure raised with it."""
    proc = subprocess.run(list(cmd), capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: status {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def parse_fields(line: str) -> dict[str, str]:
    """``Key=Value Key=Value ...`` of a ``scontrol -o`` line (values may hold spaces only in known fields)."""
    out: dict[str, str] = {}
    for match in re.finditer(r"(\w[\w:/]*)=(.*?)(?= \w[\w:/]*=|$)", line.strip()):
        out[match.group(1)] = match.group(2)
    return out


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("up", "down"):
        print("usage: python tests/cluster/slurm.py {up|down} DIR", file=sys.stderr)
        return 2
    root = Path(argv[1]).resolve()
    if argv[0] == "up":
        cluster = Cluster(root).start()
        for proc in cluster.procs:
            (root / "run" / "pids").open("a").write(f"{proc.pid}\n")
        print(f"export SLURM_CONF={cluster.conf}")
        return 0
    for pid in (root / "run" / "pids").read_text().split():
        try:
            os.killpg(int(pid), signal.SIGTERM)
        except ProcessLookupError:
            pass
    (root / "run" / "pids").unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
