"""The five stages, one module each, named as the stage, and their table (``STAGES``).

Each module holds a stage's code, ``run_stage(cfg, run, ctx)``, and beside it its declaration ``STAGE``
(a :class:`~xlt.contract.StageSpec`: upstream stages, file inputs, outputs, output check, guard); ``ctx``
is the :class:`~xlt.contract.StageContext` the contract builds (inputs, provenance). The entry points run
stages through :func:`run_stages`, which hands this table to the contract's engine
(:func:`xlt.contract.run_stages`); tests and tools drive one stage with :func:`call_stage`. A stage reads
and writes the run directory (:class:`xlt.run.layout.RunDir`); the layers it calls (``xlt.data``,
``xlt.translation``, ``xlt.training``, ``xlt.scoring``, ``xlt.reporting``) hold the library code and
never import a stage. No stage imports another: a stage reads what an upstream one left through the run
directory's checked readers (:mod:`xlt.run.artifacts`) and, where it must, that stage's current inputs through
its context (:meth:`xlt.contract.StageContext.of`, from this table).

* :mod:`~xlt.stages.build_data`  the English training set (:mod:`xlt.data.assemble`) and its build report;
* :mod:`~xlt.stages.translate`   units, shards, merge, report, import (:mod:`xlt.translation`);
* :mod:`~xlt.stages.train`       set-up, train, save, clean-up (:mod:`xlt.training`);
* :mod:`~xlt.stages.evaluate`    every (benchmark, language) job of a shard, resumably (:mod:`xlt.scoring`);
* :mod:`~xlt.stages.report`      the merged report files and plots (:mod:`xlt.reporting`);
* :mod:`~xlt.stages.inputs`      file inputs several stages declare (local files, models, the translator).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xlt import contract
from xlt.run.layout import RunDir
from xlt.stages import build_data, evaluate, report, train, translate

# In the order a full run takes them (xlt.config.rules.STAGES names the same five).
STAGES: dict[str, contract.StageSpec] = {m.STAGE.name: m.STAGE for m in (build_data, translate, train, evaluate, report)}


def run_stages(cfg: Any, run: RunDir, names: Sequence[str], on_first_run: Callable[[], None] | None = None,
               launch: str | None = None) -> list[str]:
    """Run the stages ``names`` in order under the contract (:func:`xlt.contract.run_stages`); return those that ran."""
    return contract.run_stages(cfg, run, [STAGES[name] for name in names], on_first_run=on_first_run, launch=launch,
                               table=STAGES)


def context(cfg: Any, run: RunDir, name: str, force: bool | None = None) -> contract.StageContext:
    """Stage ``name``'s inputs as they are now (:func:`xlt.contract.context`)."""
    return contract.context(cfg, run, STAGES[name], force=force, table=STAGES)


def call_stage(name: str, cfg: Any, run: RunDir, force: bool | None = None, **extra: Any) -> dict[str, Any] | None:
    """Run stage ``name`` once with its current context, outside :func:`run_stages` (no skip decision, no
    done-marker): for tests and tools that drive one stage directly (:func:`xlt.contract.call_stage`)."""
    return contract.call_stage(STAGES[name], cfg, run, force=force, table=STAGES, **extra)
