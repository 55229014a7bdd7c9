"""Hydra entry points: compose and validate the config, find the run directory, run stages.

``python -m xlt.train`` runs every stage the recipe lists; ``python -m xlt.build_data``,
``xlt.translate``, ``xlt.finetune``, ``xlt.evaluate`` and ``xlt.report`` run one stage each, on the
same run directory (derived from the same recipe and overrides).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from xlt import config as xcfg
from xlt.cluster import SIGNALS, install_signal_handlers
from xlt.errors import XltError
from xlt.run import RunDir, atomic_write_text, is_main_process, run_name, world_size

log = logging.getLogger("xlt")

CONF_DIR = os.environ.get("XLT_CONF_DIR", str(Path(__file__).resolve().parent.parent / "conf"))

# Stage name -> "module:function". Each function takes (cfg, run) and returns a summary dict for the
# stage's done-marker, or None when the stage is not complete (e.g. one shard of several).
STAGE_FUNCS: dict[str, str] = {
    "build_data": "xlt.data.assemble:run_stage",
    "translate": "xlt.translation.stage:run_stage",
    "train": "xlt.training.stage:run_stage",
    "evaluate": "xlt.scoring.stage:run_stage",
    "report": "xlt.reporting.stage:run_stage",
}


def _register_resolvers() -> None:
    if not OmegaConf.has_resolver("xlt_run_name"):
        OmegaConf.register_new_resolver("xlt_run_name", lambda overrides: run_name(list(overrides)))
    if not OmegaConf.has_resolver("xlt_assets"):
        OmegaConf.register_new_resolver("xlt_assets", lambda: str(Path(__file__).resolve().parent / "assets"))


_register_resolvers()
xcfg.register()


def stage_function(name: str) -> Callable[[DictConfig, RunDir], dict[str, Any] | None]:
    module, _, func = STAGE_FUNCS[name].partition(":")
    return getattr(importlib.import_module(module), func)


# The config sections each stage's output depends on (its own and its upstream stages'). A stage is
# skipped only if its marker was written under the same values; otherwise it runs again (and resumes
# what it can: training from its checkpoint, evaluation per language, translation from its cache).
STAGE_INPUTS: dict[str, tuple[str, ...]] = {
    "build_data": ("data",),
    "translate": ("data", "translate"),
    "train": ("seed", "data", "translate", "model", "training"),
    "evaluate": ("seed", "data", "translate", "model", "training", "eval"),
    "report": ("seed", "data", "translate", "model", "training", "eval"),
}
# Values that say how work is split, not what is computed.
_NOT_INPUTS = {("translate", "shard_index"), ("translate", "num_shards"), ("eval", "shard_index"),
               ("eval", "num_shards")}


def stage_inputs(cfg: DictConfig, stage: str) -> str:
    """A hash of the config values ``stage``'s output depends on."""
    values: dict[str, Any] = {}
    for key in STAGE_INPUTS[stage]:
        value = OmegaConf.to_container(cfg[key], resolve=True) if OmegaConf.is_config(cfg[key]) else cfg[key]
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if (key, k) not in _NOT_INPUTS}
        values[key] = value
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:16]


WAIT_POLL_S = 2.0


def _wait_for_rank0(run: RunDir, name: str, inputs: str) -> None:
    """On ranks > 0: wait until rank 0 has finished (or failed) stage ``name``."""
    log.info("stage %-10s runs on rank 0; waiting for it", name)
    failed = run.path / "stages" / f"{name}.failed"
    while True:
        if run.is_done(name) and run.done_info(name).get("inputs") == inputs:
            return
        if failed.exists():
            raise XltError(f"stage {name} failed on rank 0 (see its log); this rank stops too")
        time.sleep(WAIT_POLL_S)


def run_stages(cfg: DictConfig, run: RunDir, stages: Sequence[str]) -> None:
    """Run ``stages`` in order, skipping those already done with the same inputs (unless ``force``).

    Under a multi-process launcher (``accelerate launch``) only ``train`` runs on every rank; the other
    stages run on rank 0, while the other ranks wait for stages before ``train`` and skip those after.
    """
    distributed = world_size() > 1
    train_at = list(stages).index("train") if "train" in stages else len(stages)
    for i, name in enumerate(stages):
        inputs = stage_inputs(cfg, name)
        if run.is_done(name) and not cfg.force:
            if run.done_info(name).get("inputs", inputs) == inputs:
                log.info("stage %-10s already done (%s); skipping. Use force=true to redo it.", name,
                         run.marker(name))
                continue
            log.info("stage %-10s was done with other settings; running it again", name)
        if distributed and name != "train" and not is_main_process():
            if i < train_at:
                _wait_for_rank0(run, name, inputs)
            else:
                log.info("stage %-10s runs on rank 0 only", name)
            continue
        failed = run.path / "stages" / f"{name}.failed"
        failed.unlink(missing_ok=True)
        log.info("stage %-10s starting", name)
        try:
            summary = stage_function(name)(cfg, run)
        except BaseException:
            if distributed and is_main_process():
                atomic_write_text(failed, "failed\n")
            raise
        if summary is not None and is_main_process():
            run.mark_done(name, {**summary, "inputs": inputs})
        log.info("stage %-10s finished", name)


def _setup_logging() -> None:
    if not is_main_process():
        logging.getLogger().setLevel(logging.WARNING)
    for noisy in ("httpx", "urllib3", "filelock", "datasets", "huggingface_hub"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def resolve_run(cfg: DictConfig) -> tuple[DictConfig, RunDir]:
    """Validate ``cfg`` (rejecting unknown keys) and return it with its run directory."""
    validated = xcfg.validate(cfg)
    run = RunDir(HydraConfig.get().runtime.output_dir)
    return validated, run


def make_main(default_stages: Sequence[str] | None) -> Callable[[], None]:
    """Build a Hydra entry point that runs ``default_stages`` (None: the stages the config lists)."""

    @hydra.main(config_path=CONF_DIR, config_name="config", version_base="1.3")
    def _main(cfg: DictConfig) -> None:
        _setup_logging()
        # SLURM warns with USR1 before the time limit: checkpoint, stop, and let the requeued job resume.
        # Under submitit, TERM is left to submitit's own handler.
        install_signal_handlers(("SIGUSR1",) if os.environ.get("SUBMITIT_EXECUTOR") else SIGNALS)
        try:
            validated, run = resolve_run(cfg)
            from xlt import hub
            from xlt.prefetch import prefetch_hint

            hub.PREFETCH_COMMAND = prefetch_hint()
            stages = list(default_stages) if default_stages is not None else list(validated.stages)
            log.info("run directory: %s", run.path)
            if is_main_process():
                from xlt.secrets import redact_config

                atomic_write_text(run.path / "config.yaml", OmegaConf.to_yaml(redact_config(validated)))
            run_stages(validated, run, stages)
        except XltError as err:
            print(f"\nxlt: error: {err}", file=sys.stderr)
            sys.exit(2)
        except KeyboardInterrupt:
            print("\nxlt: interrupted; rerun the same command to resume.", file=sys.stderr)
            sys.exit(130)

    return _main
