"""`python -m xlt.cluster plan`: a sweep resolved once, as the one-run-at-a-time commands resolve it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from xlt.cluster import commands
from xlt.cluster.plan import plan_sweep
from xlt.cluster.sweep_configs import SweepConfigs
from xlt.cluster.sweeps import read_sweep, run_dir
from xlt.config.compose import compose

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "sweeps" / "paper.txt"


def test_the_plan_of_the_paper_sweep_is_what_each_line_resolves_to():
    configs = SweepConfigs()
    plan = plan_sweep(PAPER, ["run_root=/scratch/runs"], configs)
    lines = read_sweep(PAPER)
    assert len(plan.runs) == len(lines) == 30
    assert configs.compositions == len({tuple(a for a in line if not a.startswith("seed=")) for line in lines})
    for i in (0, 15, 29):  # one of each kind, composed one by one as `rundirs` and `stages` did
        args = [*lines[i], "run_root=/scratch/runs"]
        assert plan.runs[i].run_dir == run_dir(args)
        assert plan.runs[i].stages == list(compose(None, args).stages)
    first = next(i for i, line in enumerate(lines, 1) if "translate" in compose(None, line).stages)
    assert plan.first_translate == first == 16
    assert plan.compare_root == "/scratch/runs/paper_compare" and plan.run_root == "/scratch/runs"


def test_the_shell_lines_and_the_json(tmp_path, capsys):
    sweep = tmp_path / "mine.txt"
    sweep.write_text("+recipe=demo_tiny seed=1\n# a comment\n+recipe=demo_tiny seed=2 'training.learning_rate=1e-4'\n")
    assert commands.main(["plan", str(sweep), "--shell", f"run_root={tmp_path}/my runs"]) == 0
    shell = capsys.readouterr().out
    script = shell + '\nprintf "%s\\n" "$PLAN_COUNT" "$PLAN_FIRST_TRANSLATE" "${#PLAN_DIRS[@]}" "${PLAN_DIRS[1]}" ' \
        '"$PLAN_COMPARE_ROOT" "${#PLAN_TRANSLATE_ARGS[@]}"'
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["2", "", "2", f"{tmp_path}/my runs/demo_tiny/seed=2,training.learning_rate=1e-4",
                   f"{tmp_path}/my runs/mine_compare", "0"]
    assert commands.main(["plan", str(sweep)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["count"] == 2 and data["first_translate"] is None
    assert data["runs"][1]["line"] == ["+recipe=demo_tiny", "seed=2", "training.learning_rate=1e-4"]


def test_a_line_that_cannot_be_composed_names_its_file_and_line(tmp_path, capsys):
    sweep = tmp_path / "bad.txt"
    sweep.write_text("+recipe=demo_tiny seed=1\n+recipe=demo_tiny training.precision=fp8\n")
    assert commands.main(["plan", str(sweep)]) == 2
    err = capsys.readouterr().err
    assert f"{sweep}: run 2 (+recipe=demo_tiny training.precision=fp8)" in err and "fp8" in err
