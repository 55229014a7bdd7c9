"""Simulated comparisons with known truth, in memory, for the calibration suite (test_calibration.py).

A simulated run looks to the findings' checks (:mod:`xlt.reporting.checks`) like a :class:`~xlt.reporting.run_tables.RunInfo`: its
``config`` as recorded, ``results[name].per_language`` (accuracy, resource level, subset accuracies) and
predictions, which are put in the checks' per-call cache of prediction rows (``paired._ROWS``) instead of
files, so a simulation costs no disk and thousands of them run in seconds.

Answers: per language, each question has a difficulty ``p`` drawn once (shared by every system: the same
questions are easy for all); a system with effect ``e`` answers it right with probability ``clip(p + e)``,
each seed independently. Equal effects: equal systems (the null).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from xlt import languages as langtab
from xlt.reporting import checks, paired, systems

MODELS = {
    "XLM-R": {"name": "xlmr_base", "name_or_path": "FacebookAI/xlm-roberta-base"},
    "XLM-V": {"name": "xlmv_base", "name_or_path": "facebook/xlm-v-base"},
    "InfoXLM": {"name": "infoxlm_base", "name_or_path": "microsoft/infoxlm-base"},
}


@dataclass
class SimResults:
    kind: str
    per_language: pd.DataFrame


@dataclass
class SimRun:
    label: str
    seed: int
    config: dict[str, Any]
    results: dict[str, SimResults] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return Path("/simulated") / self.label / f"seed={self.seed}"

    @property
    def key(self) -> str:
        return json.dumps({k: v for k, v in self.config.items() if k != "seed"}, sort_keys=True, default=str)


@dataclass
class Bench:
    """One benchmark entry of a simulated system: per language, each question's difficulty and the
    system's effect on it (``effect``: per language, an array of per-question additions), each
    question's subsets (``subsets``: per language, a list of label lists, or None) and the system's
    tokenizer (``premium`` per language, ``tokenizer`` its fingerprint; None: results without measures)."""

    name: str
    kind: str
    difficulty: dict[str, np.ndarray]
    effect: dict[str, np.ndarray]
    subsets: dict[str, list[list[str]]] | None = None
    premium: dict[str, float] | None = None  # per language, the tokenizer's premium (report column ``premium``)
    tokenizer: str = ""  # the tokenizer's fingerprint (systems sharing one have the same)
    translate_test: bool = False
    machine_translated: bool = False


def system(label: str, seeds: int, benches: list[Bench], rng: np.random.Generator, model: str | None = "XLM-R",
           translate: bool = False, llm: str | None = None,
           levels: dict[str, str] | None = None) -> list[SimRun]:
    """The runs (one per seed) of one simulated system; their predictions go into ``findings._ROWS``."""
    ev: dict[str, Any] = {"benchmarks": {b.name: {"kind": b.kind, "translate_test": b.translate_test,
                                                  **({"machine_translated": True} if b.machine_translated else {})}
                                         for b in benches}}
    if llm:
        ev.update({"scorer": "llm", "model": llm, "llm": {"model": llm}})
    cfg = {"model": MODELS[model] if model else {"name": "llm"}, "eval": ev, "stages": [],
           "translate": {"languages": ["fra_Latn"] if translate else [], "import_dir": None}}
    runs = []
    for seed in range(1, seeds + 1):
        run = SimRun(label, seed, {**cfg, "seed": seed})
        for b in benches:
            rows = []
            for lang, p in b.difficulty.items():
                correct = rng.random(p.size) < np.clip(p + b.effect[lang], 0, 1)
                row: dict[str, Any] = {"language": lang, "accuracy": correct.mean() * 100,
                                       "resource": (levels or {}).get(lang) or langtab.resource_level(lang)}
                if b.premium is not None:
                    row.update({"premium": b.premium[lang], "tokenizer_fingerprint": b.tokenizer})
                subsets = b.subsets[lang] if b.subsets else None
                if subsets is not None:
                    for sub, mask in _masks(subsets).items():
                        row[f"acc_{sub}"] = correct[mask].mean() * 100
                rows.append(row)
                ids = _ids(p.size)
                if subsets is not None and seed == 1:  # the checks read the labels of a system's first run
                    rows_ = [{"id": i, "gold": 0, "prediction": int(not c), "subsets": s}
                             for i, c, s in zip(ids, correct.tolist(), subsets, strict=True)]
                else:
                    rows_ = [{"id": i, "gold": 0, "prediction": int(not c)} for i, c in zip(ids, correct.tolist(), strict=True)]
                paired._ROWS[(str(run.path), b.name, lang)] = rows_
            run.results[b.name] = SimResults(b.kind, pd.DataFrame(rows))
        runs.append(run)
    return runs


_MASKS: dict[int, tuple[list[list[str]], dict[str, np.ndarray]]] = {}


def _masks(subsets: list[list[str]]) -> dict[str, np.ndarray]:
    """Each subset's mask of the questions (computed once per label list)."""
    if id(subsets) not in _MASKS or _MASKS[id(subsets)][0] is not subsets:
        names = sorted({s for labels in subsets for s in labels})
        _MASKS[id(subsets)] = (subsets, {sub: np.array([sub in labels for labels in subsets]) for sub in names})
    return _MASKS[id(subsets)][1]


@cache
def _ids(n: int) -> list[str]:
    return [f"q{i}" for i in range(n)]


def difficulties(rng: np.random.Generator, languages: list[str], n: int, low: float = 0.3,
                 high: float = 0.9) -> dict[str, np.ndarray]:
    """Per language, ``n`` question difficulties (probability of a right answer) uniform in [low, high]."""
    return {lang: rng.uniform(low, high, n) for lang in languages}


def shift(difficulty: dict[str, np.ndarray], by: float | dict[str, float] = 0.0) -> dict[str, np.ndarray]:
    """A system's effect: ``by`` on every question (or per language)."""
    return {lang: np.full(p.size, by.get(lang, 0.0) if isinstance(by, dict) else by) for lang, p in difficulty.items()}


def verdict(runs: list[SimRun], kind: str, claim_id: str, samples: int, seed: int = 0) -> checks.Finding:
    """The finding ``claim_id`` of benchmark ``kind`` checked on the simulated ``runs`` (its predictions
    read from the cache the runs filled, which is then emptied)."""
    from xlt.data.benchmarks import get_benchmark
    from xlt.reporting.run_tables import seed_groups

    try:
        groups = seed_groups(runs)  # type: ignore[arg-type]
        found = systems.make_systems(groups)
        bench = get_benchmark(kind)
        claim = next(c for c in bench.report.claims if c.id == claim_id)
        return checks.CHECKS[claim.check](checks.Check(found, groups, bench, claim, samples, seed))
    finally:
        paired.clear_cache()
