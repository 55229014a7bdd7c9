"""``python -m xlt.cluster plan SWEEP [--shell] [overrides]``: a sweep resolved once, for the submit scripts
(slurm/paper_sweep.sh) and ``xlt status``: every run's arguments and run directory, which runs translate (the
first of them translates for all), and the comparison's folder, each distinct structure composed once
(:mod:`xlt.cluster.sweep_configs`).

Printed as one JSON object (``count``, ``run_root``, ``compare_root``, ``first_translate`` (1-based, null
when no run translates), ``runs``: ``{index, line, args, run_dir, stages, translates}``), or with ``--shell`` as
lines a bash script ``eval``-s (``PLAN_COUNT``, ``PLAN_RUN_ROOT``, ``PLAN_COMPARE_ROOT``, ``PLAN_FIRST_TRANSLATE``
(empty when none), the arrays ``PLAN_TRANSLATE_ARGS`` (that run's sweep line, without the extra overrides) and
``PLAN_DIRS`` (the distinct run directories)), every value shell-quoted.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path

from xlt.cluster.sweep_configs import SweepConfigs
from xlt.cluster.sweeps import read_sweep
from xlt.config.keys import run_name
from xlt.errors import ConfigError


@dataclass(frozen=True)
class PlannedRun:
    index: int  # 1-based, as SLURM_ARRAY_TASK_ID with --array=1-N
    line: list[str]  # the sweep line's arguments
    args: list[str]  # the line's and the extra overrides
    run_dir: str
    stages: list[str]
    translates: bool


@dataclass
class SweepPlan:
    sweep: str
    runs: list[PlannedRun] = field(default_factory=list)
    run_root: str = ""  # the first run's (the comparison's folder is below it)
    compare_root: str = ""

    @property
    def first_translate(self) -> int | None:
        return next((r.index for r in self.runs if r.translates), None)

    def as_dict(self) -> dict[str, object]:
        return {"sweep": self.sweep, "count": len(self.runs), "run_root": self.run_root,
                "compare_root": self.compare_root, "first_translate": self.first_translate,
                "runs": [asdict(r) for r in self.runs]}

    def shell(self) -> str:
        """Lines a bash script evaluates (module docstring)."""
        first = self.first_translate
        tta = self.runs[first - 1].line if first else []
        dirs = list(dict.fromkeys(r.run_dir for r in self.runs))
        q = shlex.quote
        return "\n".join([f"PLAN_COUNT={len(self.runs)}", f"PLAN_RUN_ROOT={q(self.run_root)}",
                          f"PLAN_COMPARE_ROOT={q(self.compare_root)}", f"PLAN_FIRST_TRANSLATE={first or ''}",
                          f"PLAN_TRANSLATE_ARGS=({' '.join(map(q, tta))})", f"PLAN_DIRS=({' '.join(map(q, dirs))})"])


def task_overrides(args: list[str]) -> list[str]:
    """The overrides that name a run's directory (Hydra's ``overrides.task``: no ``hydra.*`` setting)."""
    return [a for a in args if not a.lstrip("+~").startswith(("hydra.", "hydra/"))]


def plan_sweep(path: str | Path, extra: list[str] | None = None, configs: SweepConfigs | None = None) -> SweepPlan:
    """Every run of the sweep file ``path`` with ``extra`` overrides (as slurm/train_array.sbatch applies them),
    resolved by the entry points' rules (:func:`xlt.cluster.sweeps.run_dir`); ``configs``: compositions to share
    (``xlt status`` checks the same runs' stages with them). A line whose config cannot be composed raises
    :class:`~xlt.errors.ConfigError` naming the file and line."""
    configs = configs or SweepConfigs()
    extra = list(extra or [])
    plan = SweepPlan(str(path))
    for index, line in enumerate(read_sweep(path), 1):
        args = [*line, *extra]
        try:
            root, stages = configs.with_config(args, lambda cfg: (str(cfg.run_root), list(cfg.stages)))
        except ConfigError as err:
            raise ConfigError(f"{path}: run {index} ({' '.join(line)}): {err}") from None
        plan.run_root = plan.run_root or root
        plan.runs.append(PlannedRun(index, line, args, f"{root}/{run_name(task_overrides(args))}", stages,
                                    "translate" in stages))
    plan.compare_root = f"{plan.run_root}/{Path(path).stem}_compare"
    return plan


def main(argv: list[str]) -> int:
    """``plan SWEEP [--shell] [overrides]`` (the arguments after ``plan``)."""
    shell = "--shell" in argv
    rest = [a for a in argv if a != "--shell"]
    plan = plan_sweep(rest[0], rest[1:])
    print(plan.shell() if shell else json.dumps(plan.as_dict(), indent=2, ensure_ascii=False))
    return 0
