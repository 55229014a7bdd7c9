"""Sweep files are checked line by line: one named recipe per run, UTF-8; errors name the file and line."""

from __future__ import annotations

import pytest

from xlt.cluster.commands import main
from xlt.cluster.sweeps import read_sweep
from xlt.errors import ConfigError


@pytest.mark.parametrize(("line", "match"), [
    ("+recipe=demo_tiny +recipe=xlmr_zeroshot seed=2", r"sweep.txt:2: 2 recipes on one line"),
    ("+recipe= seed=2", r"sweep.txt:2: '\+recipe=': write '\+recipe=<name>'"),
    ("recipe=demo seed=2", r"sweep.txt:2: 'recipe=demo': write '\+recipe=<name>'"),
    ("seed=2", r"sweep.txt:2: no '\+recipe=<name>'"),
    ("+recipe=demo_tiny 'seed=2", r"sweep.txt:2: cannot parse line"),
])
def test_a_bad_sweep_line_is_named(tmp_path, line, match):
    sweep = tmp_path / "sweep.txt"
    sweep.write_text(f"+recipe=demo_tiny seed=1\n{line}\n")
    with pytest.raises(ConfigError, match=match):
        read_sweep(sweep)


def test_non_utf8_sweep_file_names_file_and_line(tmp_path, capsys):
    sweep = tmp_path / "sweep.txt"
    sweep.write_bytes(b"# sweep\n+recipe=demo_tiny seed=1\n+recipe=demo_tiny description=caf\xe9\n")
    with pytest.raises(ConfigError, match=r"sweep.txt:3: bytes that are not UTF-8"):
        read_sweep(sweep)
    assert main(["count", str(sweep)]) == 2
    assert "xlt: error:" in capsys.readouterr().err


def test_a_good_sweep_file_lists_its_runs(tmp_path):
    sweep = tmp_path / "sweep.txt"
    sweep.write_text("# seeds\n+recipe=demo_tiny seed=1\n\n+recipe=demo_tiny seed=2  # second\n")
    assert read_sweep(sweep) == [["+recipe=demo_tiny", "seed=1"], ["+recipe=demo_tiny", "seed=2"]]


def test_rundirs_follow_the_run_root_of_the_recipe_and_of_the_command_line(tmp_path, capsys):
    """``rundirs`` names the folders the entry points write into: a recipe's own ``run_root`` (a user recipe
    from ``hydra.searchpath``) is seen, a command-line ``run_root`` wins over it, and without either the schema's
    ``runs``. The run's name is that of its overrides, ``hydra.*`` settings left out (as Hydra's own)."""
    folder = tmp_path / "conf"
    (folder / "recipe").mkdir(parents=True)
    own_root = tmp_path / "recipe_runs"
    (folder / "recipe" / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - /recipe/demo_tiny\nrecipe_name: mine\n"
        f"run_root: {own_root}\n")
    search = f"hydra.searchpath=[file://{folder}]"
    sweep = tmp_path / "sweep.txt"
    sweep.write_text(f"+recipe=mine {search} seed=2\n+recipe=mine {search} seed=2 run_root={tmp_path / 'cli'}\n"
                     "+recipe=demo_tiny seed=3\n")
    assert main(["rundirs", str(sweep)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{own_root}/mine/seed=2", f"{tmp_path / 'cli'}/mine/seed=2", "runs/demo_tiny/seed=3"]
