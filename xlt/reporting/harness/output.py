"""The report stage's harness folder (``eval.llm.harness_output``): where it goes, writing it
(:mod:`xlt.reporting.harness.export`, loaded only when it is written), and the stage's check of it."""

from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import DictConfig

from xlt.config.llm import selected as llm_selected
from xlt.run.layout import RunDir

log = logging.getLogger("xlt.harness")


def harness_output_folder(eval_cfg: DictConfig, run: RunDir) -> Path | None:
    """Where ``eval.llm.harness_output`` says the report stage writes the results as the harness's output folder
    (true: the run directory's ``harness/``; a folder); None: nowhere (false, or not an LLM run)."""
    where = eval_cfg.llm.get("harness_output") if llm_selected(eval_cfg) else None
    if where is None or where is False:
        return None
    return run.harness_output if where is True else Path(str(where)).expanduser()


def write_harness_output(eval_cfg: DictConfig, run: RunDir) -> Path | None:
    """The report stage's harness folder: with ``eval.llm.harness_output``, every result of ``run`` written as
    lm-evaluation-harness's output folder (:func:`xlt.reporting.harness.export.export_results`; its evaluation time from the evaluate stage's
    done-marker); returns the model's folder in it, None when not wanted."""
    folder = harness_output_folder(eval_cfg, run)
    if folder is None:
        return None
    from xlt.reporting.harness.export import export_results  # lazy: start-up time (torch, transformers)

    written = export_results(eval_cfg, run, folder)
    log.info("lm-evaluation-harness's files of the results: %s", written)
    return written


def harness_output_problems(eval_cfg: DictConfig, run: RunDir) -> list[str]:
    """The report stage's check of its harness folder: missing where ``eval.llm.harness_output`` wants one (a
    results file in a model's folder), so that asking for it after the report reruns the report stage."""
    folder = harness_output_folder(eval_cfg, run)
    if folder is None or any(folder.glob("*/results_*.json")):
        return []
    where = folder.relative_to(run.path).as_posix() if folder.is_relative_to(run.path) else str(folder)
    return [f"{where}/ missing (eval.llm.harness_output: lm-evaluation-harness's output folder of the results)"]
