"""The scorer registry: ``eval.scorer`` -> a factory ``(cfg, run) -> scorer``.

A scorer has ``score(items: Dataset, *, benchmark: str, language: str) -> np.ndarray`` of shape
``(len(items), max options of these items)``: higher means more likely; the prediction is the argmax
(first on ties). Items have their own number of options (``len(item["options"])``): the slots an item
does not have hold ``-inf`` (:func:`empty_scores` makes such an array; :func:`check_scores` checks it). A scorer
may also have ``language_meta(benchmark, language) -> dict`` (e.g. an LLM's count of unparseable
answers); the evaluate stage stores it in that language's result file under ``scorer_meta``.

The registry (:data:`xlt.registry.SCORERS`) holds ``"module:attr"`` references, imported on first use, so
scorers with heavy or optional dependencies register without being imported; an installed package adds
one with an entry point in the group ``xlt.scorers``, a definition file of ``eval.include_path`` one marked
``@SCORERS.named("...")`` (``xlt plugins`` lists them). Each scorer declares its version, the model it
scores and what it reads (:mod:`xlt.scoring.declaration`).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from datasets import Dataset

from xlt.data.schema import option_counts
from xlt.errors import ConfigError
from xlt.registry import SCORERS
from xlt.scoring.declaration import ScorerDeclaration


class Scorer(Protocol):
    def score(self, items: Dataset, *, benchmark: str, language: str) -> np.ndarray: ...


def empty_scores(counts: Any, fill: float = 0.0) -> np.ndarray:
    """A float32 ``(n, max(counts))`` array: ``fill`` in each item's own ``counts[i]`` slots, ``-inf`` beyond."""
    counts = np.asarray(counts, dtype=np.int64)
    width = int(counts.max()) if counts.size else 0
    own = np.arange(width)[None, :] < counts[:, None]
    return np.where(own, np.float32(fill), np.float32(-np.inf)).astype(np.float32)


class GoldScorer:
    """Always ranks the gold option first (for tests: every answer right)."""

    declaration = ScorerDeclaration(version=1)

    def __init__(self, cfg: Any = None, run: Any = None):
        pass

    def score(self, items: Dataset, *, benchmark: str, language: str) -> np.ndarray:
        labels = np.asarray(items["label"], dtype=int)
        scores = empty_scores(option_counts(items))
        scores[np.arange(len(labels)), labels] = 1.0
        return scores


class FixedScorer:
    """Always picks option ``eval.fixed_option`` (for tests and the "always A" baseline).

    An item with no such option (``fixed_option >= len(options)``, e.g. option 3 of a 2-option item) gets no
    prediction: all its scores are ``-inf``, so it counts as wrong (prediction -1, like an LLM answer that
    names no option)."""

    declaration = ScorerDeclaration(version=1, settings=lambda e: {"fixed_option": e.fixed_option})

    def __init__(self, cfg: Any = None, run: Any = None, option: int | None = None):
        option = option if option is not None else (int(cfg.eval.fixed_option) if cfg is not None else 0)
        if option < 0:
            raise ConfigError(f"eval.fixed_option must be >= 0 (0 is the first option), got {option}")
        self.option = option

    def score(self, items: Dataset, *, benchmark: str, language: str) -> np.ndarray:
        counts = option_counts(items)
        scores = empty_scores(counts)
        has = counts > self.option
        scores[~has] = -np.inf
        if has.any():  # then some item has more than `option` options: the column exists
            scores[has, self.option] = 1.0
        return scores


def build_scorer(cfg: Any, run: Any) -> Scorer:
    """Construct the scorer ``cfg.eval.scorer`` names (:data:`xlt.registry.SCORERS`); an unknown name raises
    :class:`ConfigError`."""
    return SCORERS.get_entry(cfg.eval.scorer)(cfg, run)


def check_scores(scores: Any, counts: Any, where: str) -> np.ndarray:
    """Validate a scorer's output for items with ``counts[i]`` options each (:func:`option_counts`).

    It must be a float array of shape ``(n, max(counts))`` without NaN, with ``-inf`` in every slot beyond
    an item's own options (an item may also have ``-inf`` in its own slots: no score for that option)."""
    counts = np.asarray(counts, dtype=np.int64)
    arr = np.asarray(scores, dtype=np.float64)
    expected = (len(counts), int(counts.max()) if counts.size else 0)
    if arr.shape != expected:
        raise ValueError(f"{where}: scorer returned shape {arr.shape}, expected {expected} "
                         "(items, most options of an item)")
    if np.isnan(arr).any():
        raise ValueError(f"{where}: scorer returned NaN scores")
    beyond = np.arange(arr.shape[1])[None, :] >= counts[:, None]
    if (arr[beyond] != -np.inf).any():
        row = int(np.flatnonzero((beyond & (arr != -np.inf)).any(axis=1))[0])
        raise ValueError(f"{where}: scorer returned a score for an option item {row} does not have "
                         f"(it has {counts[row]} options; the slots beyond must be -inf)")
    return arr
