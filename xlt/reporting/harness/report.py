"""The report of one lm-evaluation-harness output folder, as of a run (``xlt report --harness FOLDER --out DIR``): the
folder written as an xlt run directory (:mod:`xlt.reporting.harness.imported`) and its report files written as the
report stage writes a run's (:func:`xlt.reporting.run_report.write_report`), with the folder's model and settings."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from xlt.config import validate
from xlt.reporting.harness.imported import harness_markdown, harness_provenance, harness_system
from xlt.reporting.run_report import write_report
from xlt.run.files import atomic_write_text
from xlt.run.layout import RunDir


def harness_report(folder: str, out: str, *, samples: int = 1000, seed: int = 0) -> Path:
    """``xlt report --harness FOLDER --out DIR``: write the lm-evaluation-harness output folder ``folder`` as an
    xlt run directory ``out`` (:func:`xlt.reporting.harness.imported.harness_system`) and its report
    (``report.md``, ``.html``, ``.csv``, ``.json``, ``.tex``, plots), as the report stage writes a run's; returns
    ``report.md``."""

    info = harness_system(folder, out, [], samples, seed, into=out)
    cfg = validate(info.config)
    # No xlt data source to read the items' texts from: the item report counts without them.
    cfg = OmegaConf.merge(cfg, {"recipe_name": f"lm-evaluation-harness folder {folder}",
                                "eval": {"bootstrap_samples": samples, "bootstrap_seed": seed}})
    OmegaConf.set_struct(cfg, False)
    cfg.eval.benchmarks = {}
    run = RunDir(out)
    provenance = harness_provenance([info])
    write_report(cfg.eval, cfg.model, run, info.results, {"harness": provenance.get(info.label)},
                 recipe_name=cfg.recipe_name, seed=cfg.seed)
    atomic_write_text(run.report("md"), run.report("md").read_text(encoding="utf-8") + harness_markdown(provenance))
    return run.report("md")
