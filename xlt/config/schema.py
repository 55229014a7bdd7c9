"""The root schema :class:`XltConfig`: one section per config group in ``conf/``."""

from __future__ import annotations

from dataclasses import dataclass

from xlt.config.data import DataConfig
from xlt.config.eval import EvalConfig
from xlt.config.fields import neutral, opt
from xlt.config.logger import LoggerConfig
from xlt.config.model import ModelConfig
from xlt.config.training import TrainingConfig
from xlt.config.translate import TranslateConfig


@dataclass
class XltConfig:
    """The whole configuration of one xlt run."""

    # The stages `python -m xlt.train` runs, in this order (a subset of STAGES).
    stages: list[str] = neutral(why="which stages run now, not what any of them computes", default_factory=lambda: ["build_data", "train", "evaluate", "report"])
    seed: int = opt(42, affects="train", ge=0, le=2**32 - 1)  # numpy seeds take 0..2**32-1
    # Root folder of run directories; each run's folder is derived from the recipe and its overrides.
    run_root: str = neutral("runs", why="where run directories go")
    # Set by the recipe file (its own name); used to name the run directory.
    recipe_name: str = neutral("none", why="names the run directory only")
    description: str = neutral("", why="free text for the report")
    # Redo the stages that run (and so everything downstream of them): see xlt/contract.py.
    force: bool = neutral(False, why="redoes stages; what they compute is unchanged")
    # Hydra multirun (-m): stop the sweep at the first job that fails (default: report it, run the rest).
    multirun_fail_fast: bool = neutral(False, why="how a sweep reacts to a failed job")
    model: ModelConfig = opt(default_factory=ModelConfig, affects="train")
    data: DataConfig = opt(default_factory=DataConfig, affects="build_data")
    translate: TranslateConfig = opt(default_factory=TranslateConfig, affects="translate")
    training: TrainingConfig = opt(default_factory=TrainingConfig, affects="train")
    eval: EvalConfig = opt(default_factory=EvalConfig, affects="evaluate")
    logger: LoggerConfig = neutral(default_factory=LoggerConfig, why="experiment tracking only")
