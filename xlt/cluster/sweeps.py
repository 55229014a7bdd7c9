"""Sweep files: one run per line, ``+recipe=<name> key=value ...`` (shell-quoted where needed); blank lines and
``#`` comments are ignored. ``python -m xlt.cluster line FILE N`` prints the N-th run (1-based), one argument per
line, for sbatch array scripts; ``count FILE`` the number of runs; ``recipes FILE`` the distinct recipes;
``rundirs FILE [overrides]`` the run directories."""

from __future__ import annotations

import shlex
from pathlib import Path

from xlt.config.compose import compose
from xlt.errors import ConfigError
from xlt.run.layout import run_name


def read_sweep(path: str | Path) -> list[list[str]]:
    """The runs of a sweep file: one list of overrides per non-blank, non-comment line.

    Every run picks exactly one recipe, by name (``+recipe=<name>``); a line without one, with two, or
    with an empty name, and bytes that are not UTF-8, raise :class:`ConfigError` naming the file and line.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"sweep file {path} not found")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        lineno = data[: err.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{lineno}: bytes that are not UTF-8 ({data[err.start:err.start + 4]!r}); "
                          "save the sweep file as UTF-8") from None
    runs: list[list[str]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        try:
            args = shlex.split(line, comments=True)
        except ValueError as err:
            raise ConfigError(f"{path}:{lineno}: cannot parse line ({err}): {line!r}") from None
        if not args:
            continue
        recipes = [a for a in args if a.lstrip("+").startswith("recipe=")]
        if not recipes:
            raise ConfigError(f"{path}:{lineno}: no '+recipe=<name>' on the line: {line.strip()!r}")
        if len(recipes) > 1:
            raise ConfigError(f"{path}:{lineno}: {len(recipes)} recipes on one line ({', '.join(recipes)}); "
                              "a line is one run: exactly one '+recipe=<name>'")
        if not recipes[0].startswith("+recipe=") or not recipes[0].partition("=")[2].strip():
            raise ConfigError(f"{path}:{lineno}: {recipes[0]!r}: write '+recipe=<name>' with the recipe's name "
                              "(a file in recipes/)")
        runs.append(args)
    if not runs:
        raise ConfigError(f"sweep file {path} lists no runs")
    return runs


def sweep_line(path: str | Path, index: int) -> list[str]:
    """Run ``index`` (1-based, as ``SLURM_ARRAY_TASK_ID`` with ``--array=1-N``) of a sweep file."""
    runs = read_sweep(path)
    if not 1 <= index <= len(runs):
        raise ConfigError(f"{path}: run {index} requested, but the file lists runs 1..{len(runs)}")
    return runs[index - 1]


def run_dir(args: list[str]) -> str:
    """The run directory a run's arguments resolve to, by the entry points' one rule (``hydra.run.dir``):
    ``run_root`` of the composed config (the command line's, else the recipe's, else the schema's) and the
    run's name (:func:`xlt.run.layout.run_name`) of the run's own overrides (Hydra's ``overrides.task``: no
    ``hydra.*`` setting)."""
    task = [a for a in args if not a.lstrip("+~").startswith(("hydra.", "hydra/"))]
    return f"{compose(None, args).run_root}/{run_name(task)}"


def recipe_of(args: list[str]) -> str:
    return next(a.partition("=")[2] for a in args if a.startswith("+recipe="))

