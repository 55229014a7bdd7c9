"""A Hydra callback that summarises a multirun (e.g. ``seed=1,2,3``) when it ends.

After every job of ``python -m xlt.train -m +recipe=NAME seed=1,2,3`` has finished (locally or through
the SLURM launcher, which waits for its job array), the sweep is expanded the way Hydra's basic sweeper
does, each job's run directory is derived from its overrides (:func:`xlt.run.layout.run_name`), and the runs
that have a report are compared with :func:`xlt.reporting.compare_runs.compare_runs`: mean ± std over seeds,
side-by-side tables and paired tests, in ``<run_root>/multirun/<recipe>/<sweep>/``.
"""

from __future__ import annotations

import itertools
import logging
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback

from xlt.run.layout import RunDir, run_name

log = logging.getLogger("xlt.multirun")


def expand_sweep(overrides: list[str]) -> list[list[str]]:
    """Every job's overrides of a sweep (the cartesian product of the sweep values, as Hydra runs them)."""
    choices = []
    for ov in OverridesParser.create().parse_overrides(overrides):
        if ov.is_sweep_override():
            key = ov.get_key_element()
            choices.append([f"{key}={value}" for value in ov.sweep_string_iterator()])
        else:
            choices.append([ov.input_line])
    return [list(job) for job in itertools.product(*choices)]


class MultirunSummary(Callback):
    """Compare the runs of a finished multirun (configured in ``conf/config.yaml``)."""

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        from xlt.reporting.compare_runs import compare_runs  # lazy: start-up time

        overrides = [o for o in config.hydra.overrides.task if not o.startswith("hydra")]
        root = Path(str(config.run_root))
        runs = [root / run_name(job) for job in expand_sweep(overrides)]
        reported = [r for r in runs if RunDir(r).marker("report").is_file()]
        if len(reported) < 2:
            log.info("multirun: %d of %d runs have a report; no summary", len(reported), len(runs))
            return
        recipe, _, sweep = run_name(overrides).partition("/")
        out = root / "multirun" / recipe / sweep
        compare_runs(reported, out)
        missing = [str(r) for r in runs if r not in reported]
        log.info("multirun summary of %d runs (mean ± std over seeds): %s%s", len(reported), out / "compare.md",
                 f"; without a report: {missing}" if missing else "")
