"""The ``build_data`` stage: build the English training set and save it in the run directory.

Reads the sources named by ``data.sources`` (and, with decontamination on, the evaluation texts of the
local benchmark copies) through :mod:`xlt.data.assemble`, then writes ``run.train_set`` (atomically),
``data/train_set.tsv`` (``data.export_tsv``) and ``data/build_report.{json,md}`` with the stage's
provenance, and prints the report's tables.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from xlt.contract import StageContext
from xlt.data.assemble import SPLITS, build, decontamination_texts, print_report, report_markdown
from xlt.data.export import write_tsv
from xlt.run import RunDir, atomic_dir, atomic_write_json, atomic_write_text


def run_stage(cfg: DictConfig, run: RunDir, ctx: StageContext) -> dict[str, Any]:
    """Build, save (atomically), export TSV, write and print the build report.

    ``ctx`` (built by the contract) supplies the provenance recorded in the build report.
    """
    data_cfg = cfg.data
    eval_texts = decontamination_texts(cfg.eval) if data_cfg.decontamination.enabled else None
    dsd, report, result = build(data_cfg, eval_texts)
    if data_cfg.export_tsv:
        write_tsv([r for s in SPLITS for r in result.records[s]], run.data / "train_set.tsv")
    with atomic_dir(run.train_set) as tmp:
        dsd.save_to_disk(str(tmp))
    report["provenance"] = ctx.record()
    atomic_write_json(run.data / "build_report.json", report)
    atomic_write_text(run.data / "build_report.md", report_markdown(report))
    print_report(report)
    return {
        "train": len(dsd["train"]),
        "dev": len(dsd["dev"]),
        "per_dataset": {st.dataset: dict(st.kept) for st in result.stats},
        "train_set": str(run.train_set),
    }
