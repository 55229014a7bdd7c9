"""The scorer registry: ``eval.scorer`` -> a factory ``(cfg, run) -> scorer``.

A scorer has ``score(items: Dataset, *, benchmark: str, language: str) -> np.ndarray`` of shape
``(len(items), 4)``: higher means more likely; the prediction is the argmax (first on ties). A scorer
may also have ``language_meta(benchmark, language) -> dict`` (e.g. an LLM's count of unparseable
answers); the evaluate stage stores it in that language's result file under ``scorer_meta``.

Registry values are either a factory or a lazy ``"module:attr"`` string (imported on first use), so
scorers with heavy or optional dependencies register without being imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from datasets import Dataset

from xlt.data.schema import NUM_OPTIONS
from xlt.errors import ConfigError


class Scorer(Protocol):
    def score(self, items: Dataset, *, benchmark: str, language: str) -> np.ndarray: ...


class GoldScorer:
    """Always ranks the gold option first (for tests: every answer right)."""

    def __init__(self, cfg: Any = None, run: Any = None):
        pass

    def score(self, items: Dataset, *, benchmark: str, language: str) -> np.ndarray:
        labels = np.asarray(items["label"], dtype=int)
        scores = np.zeros((len(labels), NUM_OPTIONS), dtype=np.float32)
        scores[np.arange(len(labels)), labels] = 1.0
        return scores


class FixedScorer:
    """Always picks option ``eval.fixed_option`` (for tests and the "always A" baseline)."""

    def __init__(self, cfg: Any = None, run: Any = None, option: int | None = None):
        option = option if option is not None else (int(cfg.eval.fixed_option) if cfg is not None else 0)
        if not 0 <= option < NUM_OPTIONS:
            raise ConfigError(f"eval.fixed_option must be in 0..{NUM_OPTIONS - 1}, got {option}")
        self.option = option

    def score(self, items: Dataset, *, benchmark: str, language: str) -> np.ndarray:
        scores = np.zeros((len(items), NUM_OPTIONS), dtype=np.float32)
        scores[:, self.option] = 1.0
        return scores


def _mc_factory(cfg: Any, run: Any) -> Scorer:
    from xlt.scoring.mc import MCScorer

    return MCScorer.from_config(cfg, run)


SCORERS: dict[str, Callable[[Any, Any], Scorer] | str] = {
    "mc": _mc_factory,
    "gold": GoldScorer,
    "fixed": FixedScorer,
    # Causal LLMs (lm-evaluation-harness prompts); constructed as LLMScorer(cfg, run).
    "llm": "xlt.scoring.llm.scorer:LLMScorer",
}


# Version of each scorer's code: bump it when a change can alter the scores (another truncation rule,
# prompt assembly, numerics). It enters every result's job hash (xlt.scoring.results.job_settings), beside
# the benchmark definition's own ``version``, so exactly the affected results are recomputed.
SCORER_VERSIONS: dict[str, int] = {"mc": 1, "gold": 1, "fixed": 1, "llm": 1}


def build_scorer(cfg: Any, run: Any) -> Scorer:
    """Construct the scorer ``cfg.eval.scorer`` names; an unknown name raises :class:`ConfigError`."""
    name = cfg.eval.scorer
    if name not in SCORERS:
        raise ConfigError(f"unknown eval.scorer {name!r}; registered scorers: {sorted(SCORERS)}")
    factory = SCORERS[name]
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
    return factory(cfg, run)


def check_scores(scores: Any, n: int, where: str) -> np.ndarray:
    """Validate a scorer's output: a finite-or-(-inf) float array of shape (n, 4)."""
    arr = np.asarray(scores, dtype=np.float64)
    if arr.shape != (n, NUM_OPTIONS):
        raise ValueError(f"{where}: scorer returned shape {arr.shape}, expected ({n}, {NUM_OPTIONS})")
    if np.isnan(arr).any():
        raise ValueError(f"{where}: scorer returned NaN scores")
    return arr
