"""The sbatch templates and submit scripts in slurm/: syntax, directives, the commands they run (with stub
SLURM tools on PATH), and the USR1 -> forward -> requeue handler with real signals."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SLURM = REPO / "slurm"
SBATCH_FILES = sorted(SLURM.glob("*.sbatch"))
# Every batch shell: SLURM's, Grid Engine's and the scheduler-neutral forwarder they source (shell/).
SCRIPTS = SBATCH_FILES + sorted(SLURM.glob("*.sh")) + sorted((REPO / "shell").glob("*.sh")) + \
    sorted((REPO / "gridengine").glob("*.sh"))
ARRAYS = ["train_array.sbatch", "eval_array.sbatch", "translate_array.sbatch"]


def directives(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"#SBATCH\s+--([\w-]+)(?:=(.*))?$", line)
        if m:
            out[m.group(1)] = m.group(2) or ""
    return out


def stub_bin(tmp_path: Path) -> Path:
    """sbatch (logs its arguments, prints increasing job ids), scontrol (requeue log, show hostnames)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    (bin_dir / "sbatch").write_text(
        "#!/bin/bash\n"
        f"n=$(grep -c '^sbatch' {log} 2>/dev/null || true); n=${{n:-0}}\n"
        f'printf "sbatch" >> {log}; printf " %q" "$@" >> {log}; echo >> {log}\n'
        'echo "$((1000 + n));cluster"\n'
    )
    # scontrol as the controller answers: `show job` with the job's state (STUB_JOB_STATE, default RUNNING) and
    # its restart count, which a `requeue` raises (refused, as for --no-requeue, when STUB_REQUEUE=refuse).
    restarts = tmp_path / "restarts"
    (bin_dir / "scontrol").write_text(
        "#!/bin/bash\n"
        'if [[ "$1 $2" == "show hostnames" ]]; then echo node-a; echo node-b; exit 0; fi\n'
        f'if [[ "$1 $2" == "show job" ]]; then n=$(cat {restarts} 2>/dev/null || echo "${{SLURM_RESTART_COUNT:-0}}"); '
        'echo "JobId=${4:-$3} JobName=x JobState=${STUB_JOB_STATE:-RUNNING} Reason=${STUB_REASON:-None} Restarts=$n '
        'StartTime=2026-01-01T00:00:00 PreemptTime=None"; exit 0; fi\n'
        f'printf "scontrol" >> {log}; printf " %q" "$@" >> {log}; echo >> {log}\n'
        'if [[ "$1" == requeue ]]; then\n'
        '  if [[ "${STUB_REQUEUE:-}" == refuse ]]; then echo "Requested operation is presently disabled for job $2" >&2; exit 1; fi\n'
        f'  n=$(cat {restarts} 2>/dev/null || echo "${{SLURM_RESTART_COUNT:-0}}"); echo $((n + 1)) > {restarts}\n'
        'fi\n'
    )
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return bin_dir


def sbatch_calls(tmp_path: Path) -> list[list[str]]:
    log = tmp_path / "calls.log"
    return [shlex.split(line)[1:] for line in log.read_text().splitlines() if line.startswith("sbatch")]


def _own_records(tmp_path: Path) -> dict[str, str]:
    """The test's own folder for what slurm/common.sh keeps between requeues (its count per job id): by default
    $TMPDIR, where the fixed job ids of these tests would count every earlier test run towards the cap."""
    return {"TMPDIR": str(tmp_path)}


def run_script(script: str, args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PATH": f"{stub_bin(tmp_path)}:{os.environ['PATH']}", "XLT_HOME": str(REPO),
                "XLT_PYTHON": sys.executable, "XLT_DRY_RUN": "1", **_own_records(tmp_path), **env}
    return subprocess.run(["bash", str(SLURM / script), *args], cwd=tmp_path, env=full_env,
                          capture_output=True, text=True, timeout=120)


def commands(proc: subprocess.CompletedProcess) -> list[list[str]]:
    """The commands a dry run would execute (lines ``XLT_CMD <shell-quoted args>``)."""
    return [shlex.split(line)[1:] for line in proc.stdout.splitlines() if line.startswith("XLT_CMD")]


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_bash_syntax(path):
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0


@pytest.mark.parametrize("path", SBATCH_FILES, ids=lambda p: p.name)
def test_sbatch_directives(path):
    d = directives(path)
    assert "requeue" in d
    assert re.fullmatch(r"B:USR1@\d+", d["signal"]), d.get("signal")
    assert "common.sh" in path.read_text()
    pattern = "%A_%a" if path.name in ARRAYS else "%j"
    for key in ("output", "error"):
        assert d[key].startswith("slurm-logs/") and pattern in d[key], (key, d[key])
    assert re.fullmatch(r"\d+:\d\d:\d\d", d["time"])


def test_train_array_runs_the_sweep_line_of_its_index(tmp_path):
    # the sweep path is relative to the submit directory (the repository)
    proc = subprocess.run(["bash", str(SLURM / "train_array.sbatch"), "sweeps/paper.txt", "run_root=/scratch/runs"],
                          cwd=REPO, env={**os.environ, "XLT_PYTHON": sys.executable, "XLT_DRY_RUN": "1",
                                         "SLURM_ARRAY_TASK_ID": "25"}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert commands(proc) == [[sys.executable, "-m", "xlt.train", "+recipe=infoxlm_translate_train_all", "seed=1",
                               "run_root=/scratch/runs"]]


def test_train_array_rejects_an_index_past_the_sweep(tmp_path):
    proc = subprocess.run(["bash", str(SLURM / "train_array.sbatch"), "sweeps/paper.txt"], cwd=REPO,
                          env={**os.environ, "XLT_PYTHON": sys.executable, "XLT_DRY_RUN": "1", "SLURM_ARRAY_TASK_ID": "31"},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "runs 1..30" in proc.stderr


@pytest.mark.parametrize("script,entry,key", [("eval_array.sbatch", "xlt.evaluate", "eval"),
                                              ("translate_array.sbatch", "xlt.translate", "translate")])
def test_sharded_arrays_pass_index_and_count(tmp_path, script, entry, key):
    proc = run_script(script, ["+recipe=xlmr_zeroshot", "seed=2"], tmp_path,
                      SLURM_ARRAY_TASK_ID="3", SLURM_ARRAY_TASK_COUNT="8")
    assert proc.returncode == 0, proc.stderr
    assert commands(proc) == [[sys.executable, "-m", entry, "+recipe=xlmr_zeroshot", "seed=2",
                               f"{key}.shard_index=3", f"{key}.num_shards=8"]]


def test_sharded_array_without_task_count_uses_the_max_index(tmp_path):
    proc = run_script("eval_array.sbatch", ["+recipe=demo_tiny"], tmp_path, SLURM_ARRAY_TASK_ID="0", SLURM_ARRAY_TASK_MAX="5")
    assert commands(proc)[0][-1] == "eval.num_shards=6"


def test_array_without_array_id_explains_usage(tmp_path):
    proc = run_script("eval_array.sbatch", ["+recipe=demo_tiny"], tmp_path)
    assert proc.returncode == 2 and "usage: sbatch --array=0-K" in proc.stderr


def test_stage_job_entries(tmp_path):
    proc = run_script("stage.sbatch", ["report", "+recipe=demo_tiny", "seed=1"], tmp_path)
    assert commands(proc) == [[sys.executable, "-m", "xlt.report", "+recipe=demo_tiny", "seed=1"]]
    proc = run_script("stage.sbatch", ["compare", "runs/a/x", "runs/a/y", "--out", "cmp"], tmp_path)
    assert commands(proc) == [[sys.executable, "-m", "xlt.report", "--compare", "runs/a/x", "runs/a/y", "--out", "cmp"]]
    proc = run_script("stage.sbatch", ["rm", "-rf"], tmp_path)
    assert proc.returncode == 2 and not commands(proc)


def test_submit_eval_chains_array_and_report(tmp_path):
    proc = run_script("submit_eval.sh", ["-n", "4", "-p", "gpu", "-A", "proj", "+recipe=xlmr_zeroshot", "seed=1"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    array, report = sbatch_calls(tmp_path)
    assert array[:4] == ["--parsable", "--partition=gpu", "--account=proj", "--array=0-3"]
    assert array[4].endswith("slurm/eval_array.sbatch") and array[5:] == ["+recipe=xlmr_zeroshot", "seed=1"]
    assert "--dependency=afterok:1000" in report
    assert report[-3:] == ["report", "+recipe=xlmr_zeroshot", "seed=1"]
    assert (tmp_path / "slurm-logs").is_dir()
    assert "1000 (4 shards)" in proc.stdout and "report: 1001" in proc.stdout


@pytest.mark.parametrize(("script", "args", "said"), [
    ("submit_eval.sh", ["-n", "0", "+recipe=demo_tiny"], "-n 0: give a whole number >= 1"),
    ("submit_translate.sh", ["-n", "four", "+recipe=demo_tiny"], "-n four: give a whole number >= 1"),
    ("paper_sweep.sh", ["-j", "-2"], "-j -2: give a whole number >= 1"),
    ("submit_eval.sh", ["-x", "+recipe=demo_tiny"], "usage: slurm/submit_eval.sh"),
])
def test_the_submit_scripts_share_one_option_parser(tmp_path, script, args, said):
    """slurm/options.sh: a bad option or count stops the script (exit 2) with the usage, before any sbatch."""
    proc = run_script(script, args, tmp_path)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert not (tmp_path / "calls.log").exists()  # no sbatch was called


def test_submit_translate_chains_data_array_and_run(tmp_path):
    proc = run_script("submit_translate.sh", ["-n", "6", "+recipe=xlmr_translate_train_all"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    data, array, rest = sbatch_calls(tmp_path)
    assert data[-2:] == ["build_data", "+recipe=xlmr_translate_train_all"]
    assert "--dependency=afterok:1000" in array and "--array=0-5" in array
    assert array[-2].endswith("translate_array.sbatch")
    assert "--dependency=afterok:1001" in rest and rest[-2:] == ["train", "+recipe=xlmr_translate_train_all"]


@pytest.mark.slow  # over 15 s (several full runs, a wheel, a sweep): the slow tier, docs/testing.md
def test_paper_sweep_submits_translation_training_and_comparison(tmp_path):
    proc = run_script("paper_sweep.sh", ["-n", "4", "-j", "6", "run_root=/scratch/runs"], tmp_path,
                      XLT_TRANSLATION_CACHE="/scratch/mt-cache")
    assert proc.returncode == 0, proc.stderr
    data, translate, train, compare = sbatch_calls(tmp_path)
    cache = "translate.cache_dir=/scratch/mt-cache"
    assert data[-5:] == ["build_data", "+recipe=xlmr_translate_train_all", "seed=1", "run_root=/scratch/runs", cache]
    assert "--array=0-3" in translate and "--dependency=afterok:1000" in translate
    assert "--array=1-30%6" in train and "--dependency=afterok:1001" in train
    assert train[-4].endswith("slurm/train_array.sbatch") and train[-3].endswith("sweeps/paper.txt")
    assert train[-2:] == ["run_root=/scratch/runs", cache]
    assert "--dependency=afterok:1002" in compare
    i = compare.index("compare")
    dirs = compare[i + 1: compare.index("--out")]
    assert len(dirs) == 30 and dirs[0].startswith("/scratch/runs/xlmr_zeroshot/")
    assert "/scratch/runs/xlmr_translate_train_all/model=xlmr_large," in " ".join(dirs)
    assert compare[-1] == "/scratch/runs/paper_compare"


def test_multinode_template_launches_accelerate_on_every_node(tmp_path):
    proc = run_script("train_multinode.sbatch", ["+recipe=xlmr_translate_train_all", "training.deepspeed=zero2"], tmp_path,
                      SLURM_NNODES="2", SLURM_GPUS_ON_NODE="4", SLURM_JOB_ID="77", SLURM_JOB_NODELIST="node-[a-b]",
                      SLURM_CPUS_PER_TASK="16")
    assert proc.returncode == 0, proc.stderr
    prep, dist, final = commands(proc)
    assert prep[1:] == ["-m", "xlt.train", "+recipe=xlmr_translate_train_all", "training.deepspeed=zero2",
                        "stages=[build_data,translate]"]
    # srun 22.05/23.02 does not read SLURM_CPUS_PER_TASK: the step gets the job's CPUs per task explicitly
    assert dist[:5] == ["srun", "--nodes=2", "--ntasks-per-node=1", "--cpus-per-task=16", "--kill-on-bad-exit=1"]
    script = dist[7]
    assert "accelerate.commands.launch" in script and "-m xlt.finetune" in script
    # the launcher ignores USR2 (srun forwards it to the whole step); the wrapper TERMs the launcher on it
    assert 'trap "" USR2; exec' in script and 'trap "kill -TERM' in script
    assert dist[8:12] == [sys.executable, "2", "8", "--multi_gpu"]  # python, nodes, processes = 2 x 4
    assert dist[12:] == ["+recipe=xlmr_translate_train_all", "training.deepspeed=zero2"]
    assert final[1:] == ["-m", "xlt.train", "+recipe=xlmr_translate_train_all", "training.deepspeed=zero2"]
    d = directives(SLURM / "train_multinode.sbatch")
    assert d["ntasks-per-node"] == "1" and int(d["nodes"]) >= 2


def test_multinode_template_on_one_gpu_runs_without_multi_gpu(tmp_path):
    """accelerate refuses --multi_gpu for one process: one node with one GPU runs a plain one-process launch."""
    proc = run_script("train_multinode.sbatch", ["+recipe=xlmr_zeroshot"], tmp_path, SLURM_NNODES="1",
                      SLURM_GPUS_ON_NODE="1", SLURM_JOB_ID="78", SLURM_JOB_NODELIST="node-a")
    assert proc.returncode == 0, proc.stderr
    dist = next(c for c in commands(proc) if c[0] == "srun")
    assert "--cpus-per-task" not in " ".join(dist[:5]) and dist[dist.index("-c") + 2:][:4] == [sys.executable, "1", "1", ""]


def test_the_sbatch_scripts_find_the_repository_without_xlt_home(tmp_path):
    """sbatch runs a copy of the script from its spool folder: without XLT_HOME, submitted from elsewhere, the
    checkout of the xlt package XLT_PYTHON imports is found; when nothing is found, a clear error."""
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "job_script").write_text((SLURM / "stage.sbatch").read_text())
    env = {k: v for k, v in os.environ.items() if k != "XLT_HOME"}
    base = {**env, "PATH": f"{stub_bin(tmp_path)}:{os.environ['PATH']}", "XLT_DRY_RUN": "1", "SLURM_SUBMIT_DIR": str(tmp_path),
            "PYTHONPATH": str(REPO), **_own_records(tmp_path)}
    proc = subprocess.run(["bash", str(spool / "job_script"), "report", "+recipe=demo_tiny"], cwd=tmp_path,
                          env={**base, "XLT_PYTHON": sys.executable}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and commands(proc)[0][1:3] == ["-m", "xlt.report"], proc.stderr
    proc = subprocess.run(["bash", str(spool / "job_script"), "report", "+recipe=demo_tiny"], cwd=tmp_path,
                          env={**base, "XLT_PYTHON": "/nonexistent/python"}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "slurm/common.sh not found" in proc.stderr and "set XLT_HOME" in proc.stderr


def test_xlt_setup_is_sourced_without_set_u(tmp_path):
    """conda's and environment modules' activation scripts read unset variables."""
    setup = tmp_path / "setup.sh"
    setup.write_text('echo "activating ${CONDA_NOT_SET_ANYWHERE}" >&2\nexport XLT_FROM_SETUP=yes\n')
    driver = f'source {SLURM}/common.sh; echo "setup=$XLT_FROM_SETUP"; echo "${{UNSET_AFTER:-default}}"'
    proc = subprocess.run(["bash", "-c", driver], env={**os.environ, "XLT_SETUP": str(setup)}, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "setup=yes" in proc.stdout, proc.stderr
    assert "set -u" not in proc.stderr and "unbound variable" not in proc.stderr


def test_the_warning_comes_early_enough_for_the_grace_and_the_requeue():
    """XLT_GRACE (240 s by default) to checkpoint, then the checked requeue (XLT_REQUEUE_WAIT_S, 20 s): the
    warning of every script leaves both before the limit."""
    from xlt.cluster.requeue import REQUEUE_WAIT_S

    grace = int(re.search(r'XLT_GRACE="\$\{XLT_GRACE:-(\d+)\}"', (SLURM / "common.sh").read_text()).group(1))
    for script in SBATCH_FILES:
        lead = int(directives(script)["signal"].rsplit("@", 1)[1])
        assert lead >= grace + REQUEUE_WAIT_S, (script.name, lead, grace)


STUB_PY = """
import signal, sys, time, pathlib
out = pathlib.Path(sys.argv[1])
def on_signal(signum, frame):
    out.joinpath("got_" + signal.Signals(signum).name).write_text("1")
    sys.exit(75)
signal.signal(signal.SIGUSR1, on_signal)
signal.signal(signal.SIGTERM, on_signal)
out.joinpath("ready").write_text("1")
time.sleep(60)
"""


def _start(tmp_path: Path, child: str, **env: str) -> subprocess.Popen:
    (tmp_path / "child.py").write_text(child)
    driver = f'source {SLURM}/common.sh; xlt_exec {shlex.quote(sys.executable)} {tmp_path}/child.py {tmp_path}; echo "rc=$?"'
    return subprocess.Popen(["bash", "-c", driver], env={**os.environ, "PATH": f"{stub_bin(tmp_path)}:{os.environ['PATH']}",
                                                         "SLURM_JOB_ID": "4242", **_own_records(tmp_path), **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(path: Path, timeout: float = 30) -> None:
    end = time.time() + timeout
    while not path.exists():
        assert time.time() < end, f"{path} never appeared"
        time.sleep(0.05)


def test_usr1_is_forwarded_as_term_and_the_job_requeued(tmp_path):
    """The launcher's agent forwards TERM, not USR1: the trap turns SLURM's USR1 into a TERM."""
    proc = _start(tmp_path, STUB_PY)
    _wait_for(tmp_path / "ready")
    proc.send_signal(signal.SIGUSR1)
    out, err = proc.communicate(timeout=60)
    assert (tmp_path / "got_SIGTERM").exists() and not (tmp_path / "got_SIGUSR1").exists(), err
    assert "scontrol requeue 4242" in (tmp_path / "calls.log").read_text()
    assert "rc=0" in out


def test_a_child_that_ignores_usr1_is_requeued_after_the_grace_period(tmp_path):
    child = STUB_PY.replace("signal.signal(signal.SIGTERM, on_signal)", "signal.signal(signal.SIGTERM, signal.SIG_IGN)")
    proc = _start(tmp_path, child, XLT_GRACE="1")
    _wait_for(tmp_path / "ready")
    t0 = time.time()
    proc.send_signal(signal.SIGUSR1)
    out, err = proc.communicate(timeout=60)
    assert time.time() - t0 < 30
    assert "still running after 1s" in err
    assert "scontrol requeue 4242" in (tmp_path / "calls.log").read_text()


def test_the_requeue_status_of_a_run_preempted_directly_requeues(tmp_path):
    """A signal delivered to the processes themselves (not through the batch shell): xlt exits 75."""
    proc = _start(tmp_path, "import sys; sys.exit(75)")
    out, _ = proc.communicate(timeout=60)
    assert "scontrol requeue 4242" in (tmp_path / "calls.log").read_text() and "rc=0" in out


RECORDING_CHILD = """
import json, os, sys
from xlt.cluster.signals import record_preemption
written = record_preemption(None, "SIGUSR1 received; checkpoint saved at step 4")
json.dump([str(p) for p in written], open(os.path.join(sys.argv[1], "written.json"), "w"))
sys.exit(1)  # what accelerate launch and torchrun return when their workers exit 75
"""


def test_a_preemption_record_requeues_whatever_status_the_launcher_returns(tmp_path):
    """accelerate launch and torchrun turn the workers' 75 into 1: the record rank 0 leaves decides."""
    proc = _start(tmp_path, RECORDING_CHILD, XLT_RECORD_DIR=str(tmp_path / "records"),
                  PYTHONPATH=str(REPO))
    out, err = proc.communicate(timeout=120)
    written = json.loads((tmp_path / "written.json").read_text())
    assert len(written) == 1 and Path(written[0]).parent == tmp_path / "records", written
    assert "preemption record" in err and "checkpoint saved at step 4" in err, err
    assert "scontrol requeue 4242" in (tmp_path / "calls.log").read_text() and "rc=0" in out
    assert not Path(written[0]).exists()  # consumed: the next command of the job starts without one


def test_under_submitit_the_job_that_wrote_a_preemption_record_requeues_itself(tmp_path):
    """Hydra's slurm launcher (submitit): no batch shell of xlt's reads the record; rank 0 requeues the job
    as submitit's own preemption handler does."""
    child = ("import sys\nfrom xlt.cluster.signals import record_preemption, requeue_under_submitit\n"
             f"sys.exit(0 if requeue_under_submitit(record_preemption({str(tmp_path)!r}, 'SIGUSR1 received')) else 1)\n")
    env = {**os.environ, "PATH": f"{stub_bin(tmp_path)}:{os.environ['PATH']}", "PYTHONPATH": str(REPO),
           "SUBMITIT_EXECUTOR": "slurm", "SLURM_JOB_ID": "4243", "SLURM_ARRAY_JOB_ID": "4240", "SLURM_ARRAY_TASK_ID": "3",
           **_own_records(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "scontrol requeue 4240_3" in (tmp_path / "calls.log").read_text()
    assert json.loads((tmp_path / "preempted.json").read_text())["slurm"]["array_task_id"] == "3"


def test_without_a_preemption_record_a_failed_launch_is_not_requeued(tmp_path):
    proc = _start(tmp_path, "import sys; sys.exit(1)", XLT_RECORD_DIR=str(tmp_path / "records"))
    out, _ = proc.communicate(timeout=60)
    assert "rc=1" in out and not (tmp_path / "calls.log").exists()


def test_a_term_to_the_batch_shell_is_forwarded_without_requeue(tmp_path):
    proc = _start(tmp_path, STUB_PY)
    _wait_for(tmp_path / "ready")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert (tmp_path / "got_SIGTERM").exists(), err
    # The shell asked the scheduler why (the stub knows no job: a termination), and did not requeue.
    calls = (tmp_path / "calls.log").read_text() if (tmp_path / "calls.log").exists() else ""
    assert "requeue" not in calls and "rc=75" in out, calls
    assert "why the TERM came: from within the job: not a preemption" in err, err


def test_without_a_signal_the_exit_status_passes_through(tmp_path):
    proc = _start(tmp_path, "import sys; sys.exit(3)")
    out, _ = proc.communicate(timeout=60)
    assert "rc=3" in out
    assert not (tmp_path / "calls.log").exists()


def test_every_script_the_scripts_mention_exists():
    """Comments and commands name slurm/<file>: each one must be there (e.g. no slurm/report.sbatch)."""
    named = {m for path in SLURM.iterdir() if path.is_file()
             for m in re.findall(r"slurm/([\w.-]+\.(?:sbatch|sh))", path.read_text())}
    assert named and not [n for n in sorted(named) if not (SLURM / n).exists()]


# --- the real sbatch scripts, preempted the way SLURM does it ----------------------------------------------
# `sbatch` is emulated here: the script runs under bash with a job id, and its own `#SBATCH --signal=B:SIG@N`
# directive says which signal the batch shell gets (B: the shell only); a `scontrol requeue` (stub, logged)
# runs the script again with SLURM_RESTART_COUNT=1. `srun` (stub) runs its command on "node 0" and forwards
# USR2 to it, as srun forwards signals to its tasks (the batch shell never sends srun a TERM: the real srun
# SIGKILLs its tasks on TERM). XLT_PYTHON is a stub that passes `-m xlt.cluster` to
# python and otherwise stands for a training command: it waits to be signalled, then exits 75 (what xlt
# does once its checkpoint is written); requeued, it finishes at once.
FAKE_PYTHON = """#!{python}
import os, pathlib, signal, sys, time
args = sys.argv[1:]
if args[:2] == ["-m", "xlt.cluster"]:
    os.execv({python!r}, [{python!r}, *args])
out = pathlib.Path(os.environ["STUB_DIR"])
with open(out / "commands", "a") as f:
    f.write(os.environ.get("SLURM_RESTART_COUNT", "0") + " " + " ".join(args) + "\\n")
if os.environ.get("SLURM_RESTART_COUNT", "0") != "0" or any(a.startswith("stages=[") for a in args):
    sys.exit(0)
def on_signal(signum, frame):
    (out / ("got_" + signal.Signals(signum).name)).write_text(str(os.getpid()))
    sys.exit(75)
signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGUSR1, on_signal)
(out / "ready").write_text(str(os.getpid()))
time.sleep(600)
sys.exit(3)
"""
FAKE_SRUN = """#!/bin/bash
while [[ "$1" == --* ]]; do shift; done
export SLURM_NODEID=0
"$@" & child=$!
trap 'kill -TERM "$child"' TERM
trap 'kill -USR2 "$child"' USR2
wait "$child"; rc=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done
exit "$rc"
"""


def _sbatch_signal(script: Path) -> signal.Signals:
    m = re.fullmatch(r"B:(\w+)@\d+", directives(script)["signal"])
    assert m, "the scripts ask for the signal to the batch shell (B:)"
    return signal.Signals["SIG" + m.group(1)]


def _submit(script: str, args: list[str], tmp_path: Path, restart: int, **env: str) -> subprocess.Popen:
    bin_dir = stub_bin(tmp_path)
    (bin_dir / "srun").write_text(FAKE_SRUN)
    (bin_dir / "python-stub").write_text(FAKE_PYTHON.format(python=sys.executable))
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    full_env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "XLT_HOME": str(REPO), "STUB_DIR": str(tmp_path),
                "XLT_PYTHON": str(bin_dir / "python-stub"), "SLURM_JOB_ID": "777", "SLURM_RESTART_COUNT": str(restart),
                "XLT_GRACE": "30", **_own_records(tmp_path), **env}
    return subprocess.Popen(["bash", str(SLURM / script), *args], cwd=REPO, env=full_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


@pytest.mark.parametrize(("script", "args", "env"), [
    ("train_array.sbatch", ["sweeps/paper.txt", "run_root=/scratch/runs"], {"SLURM_ARRAY_TASK_ID": "2"}),
    ("train_multinode.sbatch", ["+recipe=xlmr_zeroshot", "training.deepspeed=zero2"],
     {"SLURM_NNODES": "2", "SLURM_GPUS_ON_NODE": "4", "SLURM_JOB_NODELIST": "node-[a-b]"}),
    ("stage.sbatch", ["finetune", "+recipe=demo_tiny"], {}),
], ids=["train_array", "train_multinode", "stage"])
def test_the_sbatch_scripts_checkpoint_and_requeue_on_their_signal(tmp_path, script, args, env):
    """The signal of the script's own directive to the batch shell -> TERM to the training command (through
    srun for the multi-node script) -> exit 75 -> `scontrol requeue`; the requeued job runs to the end."""
    sig = _sbatch_signal(SLURM / script)
    job = _submit(script, args, tmp_path, 0, **env)
    try:
        # Generous: the multi-node script composes the recipe first (`xlt.cluster stages`, ~20 s on a loaded machine).
        _wait_for(tmp_path / "ready", 300)
        job.send_signal(sig)
        out, err = job.communicate(timeout=300)
        assert job.returncode == 0, err
        assert (tmp_path / "got_SIGTERM").exists(), err  # TERM, which torch-elastic's agent forwards to workers
        assert "scontrol requeue 777" in (tmp_path / "calls.log").read_text()
        first = (tmp_path / "commands").read_text().splitlines()
        if script == "train_multinode.sbatch":  # preempted in the srun step: evaluation is left to the requeued job
            assert "accelerate.commands.launch" in first[-1] and "--machine_rank 0" in first[-1], first
        requeued = _submit(script, args, tmp_path, 1, **env)
        out, err = requeued.communicate(timeout=300)
        assert requeued.returncode == 0, err
        again = [c for c in (tmp_path / "commands").read_text().splitlines() if c.startswith("1 ")]
        assert again, "the requeued job ran nothing"
        if script == "train_multinode.sbatch":  # data prep, distributed training, then evaluation + report
            assert "accelerate.commands.launch" in again[1] and again[2].endswith("training.deepspeed=zero2")
            assert "-m xlt.train" in again[2] and "stages=" not in again[2]
    finally:  # a failed case leaves no stub behind (they sleep until signalled): the job's own process group
        if job.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(job.pid, signal.SIGKILL)


def test_python_decides_and_the_shell_forwards():
    """No batch shell holds a cap, a default of it, a restart count or an exit status of its own, nor reads
    JSON: each exits with the status of Python's one verdict line (python -m xlt.cluster after-stop)."""
    from xlt.cluster.signals import REQUEUE_EXIT

    for path in (SLURM / "common.sh", REPO / "gridengine" / "common.sh", REPO / "shell" / "forward.sh"):
        code = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))
        assert "XLT_MAX_REQUEUES" not in code and str(REQUEUE_EXIT) not in code, path
        assert not re.search(r"\b(grep|sed|jq)\b", code), path
    forward = (REPO / "shell" / "forward.sh").read_text()
    assert "-m xlt.cluster after-stop" in forward and 'return "$status"' in forward


# Features newer than bash 4.2 (RHEL/CentOS 7 login and compute nodes): none in the scripts.
BASH_43_PLUS = {
    r"\$\{[^}]*@[QEPAKaUuL]\}": "${var@op} (4.4)",
    r"\b(?:declare|local|typeset)\s+-n\b": "namerefs (4.3)",
    r"\bwait\s+-n\b": "wait -n (4.3)",
    r"\$\{\w+\[-\d+\]\}": "negative array subscripts (4.3)",
    r"\b(?:mapfile|readarray)\b[^\n]*\s-d\b": "mapfile -d (4.4)",
    r"inherit_errexit": "shopt inherit_errexit (4.4)",
    r"EPOCH(?:SECONDS|REALTIME)": "$EPOCHSECONDS (5.0)",
    r'(?<!\+)"\$\{\w+\[@\]\}"': 'an empty array "${a[@]}" is unbound under set -u before 4.4: ${a[@]+"${a[@]}"}',
}


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_the_scripts_run_on_bash_4_2(path):
    text = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))
    found = [f"{why}: {m.group(0)}" for pattern, why in BASH_43_PLUS.items() for m in re.finditer(pattern, text)]
    assert not found, found


def test_an_empty_option_list_passes_set_u_the_4_2_way():
    """What bash 4.2 does with "${a[@]}" of an empty array under set -u (an error), the guarded form does not."""
    proc = subprocess.run(["bash", "-c", 'set -u; a=(); printf "[%s]" x ${a[@]+"${a[@]}"} y'], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 0 and proc.stdout == "[x][y]", proc.stderr
