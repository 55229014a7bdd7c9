"""The ``build_data`` stage: build the English training set and save it in the run directory.

Reads the sources named by ``data.sources`` (and, with decontamination on, the evaluation texts of the
local benchmark copies) through :mod:`xlt.data.assemble`, then writes ``run.train_set`` (atomically),
``data/train_set.tsv`` (``data.export_tsv``) and ``data/build_report.{json,md}`` with the stage's
provenance, and prints the report's tables. Later stages read the set through
:func:`xlt.run.artifacts.checked_train_set`.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from xlt.contract import StageContext, StageSpec, json_problems
from xlt.data.export import write_tsv
from xlt.run.artifacts import sealed_problems
from xlt.run.files import atomic_dir, atomic_write_json, atomic_write_text
from xlt.run.layout import BUILD_REPORT_FILE, TRAIN_SET_DIR, RunDir
from xlt.run.state import BUILD_REPORT, Damaged, load_dataset_dir
from xlt.stages.inputs import local_fingerprint


def run_stage(cfg: DictConfig, run: RunDir, ctx: StageContext) -> dict[str, Any]:
    """Build, save (atomically), export TSV, write and print the build report.

    ``ctx`` (built by the contract) supplies the provenance recorded in the build report.
    """
    # datasets and pandas load here, not when the stage table is imported (every command does that)
    from xlt.data.assemble import (  # lazy: start-up time
        SPLITS,
        build,
        decontamination_texts,
        print_report,
        report_markdown,
    )

    data_cfg = cfg.data
    eval_texts = decontamination_texts(cfg.eval) if data_cfg.decontamination.enabled else None
    dsd, report, result = build(data_cfg, eval_texts)
    if data_cfg.export_tsv:
        write_tsv([r for s in SPLITS for r in result.records[s]], run.train_set_tsv)
    with atomic_dir(run.train_set) as tmp:
        dsd.save_to_disk(str(tmp))
    report["provenance"] = ctx.record()
    atomic_write_json(run.build_report, report)
    atomic_write_text(run.build_report_md, report_markdown(report))
    print_report(report)
    return {
        "train": len(dsd["train"]),
        "dev": len(dsd["dev"]),
        "per_dataset": {st.dataset: dict(st.kept) for st in result.stats},
        "train_set": str(run.train_set),
    }


def files(cfg: Any, run: RunDir) -> dict[str, Any]:
    """The stage's file inputs: the local sources and, with decontamination on, the local benchmark copies."""
    out = {f"data.sources.{name}": local_fingerprint(src.path) for name, src in sorted(cfg.data.sources.items())
           if src.enabled and src.path}
    if cfg.data.decontamination.enabled:  # build_data reads the local benchmark copies
        for name, b in sorted(cfg.eval.benchmarks.items()):
            if b.enabled and b.path:
                out[f"eval.benchmarks.{name}.path"] = local_fingerprint(b.path)
                out[f"eval.benchmarks.{name}.languages"] = list(b.languages) if b.languages else None
    return out


def check(cfg: Any, run: RunDir, ctx: Any) -> list[str]:
    """The build report and the training set, as the stage wrote them (the set's Arrow data sealed)."""
    out = json_problems(run, {run.build_report: BUILD_REPORT})
    try:
        load_dataset_dir(run.train_set)
    except Damaged as err:
        out.append(f"{TRAIN_SET_DIR} damaged ({err.why})")
    return out or sealed_problems(run, "build_data")


STAGE = StageSpec("build_data", run_stage, upstream=lambda cfg: (), files=files,
                  outputs=(TRAIN_SET_DIR, BUILD_REPORT_FILE), check=check, sealed=(TRAIN_SET_DIR,))
