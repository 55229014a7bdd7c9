"""Which run is which system, as the findings read it from each run's recorded config (``config.yaml``), never from its name.

* **model family** (XLM-R, XLM-V, InfoXLM) and size (base / large) from ``model.name`` and
  ``model.name_or_path`` (or ``eval.model`` when another model than the run's was scored);
* **setting**: ``translate-train-all`` when translations are configured (the rule of
  :func:`xlt.config.translate.translate_train_all`), else ``zero-shot``; ``llm`` when ``eval.scorer=llm``;
* **translate-test**: a benchmark whose config entry has ``translate_test: true``.

A *system* is a seed group of :func:`xlt.reporting.run_tables.seed_groups` (runs that differ only in
``seed``); its per-language accuracy is the mean over its seeds (:func:`language_means`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from xlt.config.eval import is_machine_translated as machine_translated_entry
from xlt.config.translate import translate_train_all
from xlt.reporting.run_tables import group_label, seed_groups
from xlt.run.results import first_result
from xlt.scoring import declaration

# The model families xlt tells apart from a run's config.
FAMILIES = ("XLM-R", "XLM-V", "InfoXLM")
# Matched in this order on the model's name and path (InfoXLM and XLM-V before the XLM-R prefix).
_FAMILY_PATTERNS = (("InfoXLM", re.compile(r"infoxlm", re.I)),
                    ("XLM-V", re.compile(r"xlm[-_]?v(?![a-z])", re.I)),
                    ("XLM-R", re.compile(r"xlm[-_]?r(oberta)?(?![a-z])|xlm-roberta", re.I)))
# Resource levels from high to low (the language table's default tiers, or the labels of a user grouping file).


@dataclass
class System:
    """One seed group, with what its config says it is."""

    label: str
    runs: list[Any]  # RunInfo
    family: str | None
    size: str | None
    setting: str  # "zero-shot" | "translate-train-all" | "llm"
    model_key: str  # the whole ``model`` section (same text: same model)
    llm_key: str | None  # LLM identity (eval.model + eval.llm), for scorer llm

    def describe(self) -> str:
        what = self.family or self.model_key_name()
        return f"{self.label} ({what}{' ' + self.size if self.size else ''}, {self.setting})"

    def model_key_name(self) -> str:
        return json.loads(self.model_key).get("name_or_path", "?") if self.model_key else "?"


def _get(cfg: dict[str, Any], dotted: str, default: Any = None) -> Any:
    node: Any = cfg
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def scored_model_names(cfg: dict[str, Any]) -> list[str]:
    """The names the scored model goes by in the config: the run's ``model`` section, or ``eval.model``."""
    evm = _get(cfg, "eval.model")
    if evm is not None and not declaration.names_run_model(evm):
        return [str(evm)]
    return [str(v) for v in (_get(cfg, "model.name"), _get(cfg, "model.name_or_path")) if v]


def model_family(cfg: dict[str, Any]) -> str | None:
    names = " ".join(scored_model_names(cfg))
    for family, pattern in _FAMILY_PATTERNS:
        if pattern.search(names):
            return family
    return None


def model_size(cfg: dict[str, Any]) -> str | None:
    names = " ".join(scored_model_names(cfg)).lower()
    for size in ("large", "base", "xl"):
        if re.search(rf"(?<![a-z]){size}(?![a-z])", names):
            return size
    return None


def training_setting(cfg: dict[str, Any]) -> str:
    if declaration.declaration(_get(cfg, "eval.scorer")).scores_llm:
        return "llm"
    # Plain values, never an OmegaConf node: a compared run's config.yaml is read, not resolved (no resolver runs).
    view = SimpleNamespace(translate=SimpleNamespace(languages=_get(cfg, "translate.languages") or [],
                                                     import_dir=_get(cfg, "translate.import_dir")),
                           stages=list(_get(cfg, "stages") or []))
    return "translate-train-all" if translate_train_all(view) else "zero-shot"


def make_systems(groups: list[list[Any]]) -> list[System]:
    out = []
    for g in groups:
        cfg = g[0].config
        llm = None
        if declaration.declaration(_get(cfg, "eval.scorer")).scores_llm:
            llm = json.dumps({"model": _get(cfg, "eval.model"), "llm": _get(cfg, "eval.llm")}, sort_keys=True, default=str)
        out.append(System(group_label(g), g, model_family(cfg), model_size(cfg), training_setting(cfg),
                          json.dumps(_get(cfg, "model") or {}, sort_keys=True, default=str), llm))
    return out


def is_translate_test(run: Any, benchmark: str) -> bool:
    """From the run's config entry (or, failing that, its results' recorded settings)."""
    flag = _get(run.config, f"eval.benchmarks.{benchmark}.translate_test")
    if flag is None and benchmark in run.results:
        first = first_result(run.path, benchmark)
        return first is not None and bool(first[1].get("translate_test", False))
    return bool(flag)


def is_machine_translated(run: Any, benchmark: str) -> bool:
    """Whether the run's benchmark entry is a machine-translated version of the benchmark's languages: one
    xlt made (``machine_translate_from`` in its config entry) or a copy labelled ``machine_translated: true``."""
    entry = _get(run.config, f"eval.benchmarks.{benchmark}")
    return isinstance(entry, dict) and machine_translated_entry(entry)


def direct_benchmark(system: System, kind: str) -> str | None:
    """The first benchmark of the system of kind ``kind`` evaluated in-language (not translate-test) on the
    benchmark's own test sets (not a machine-translated variant)."""
    run = system.runs[0]
    for name in sorted(run.results):
        if run.results[name].kind == kind and not is_translate_test(run, name) and not is_machine_translated(run, name):
            return name
    return None


def language_means(system: System, benchmark: str, column: str = "accuracy") -> dict[str, float]:
    """Per language, the mean over the system's seeds of ``column``."""
    vals: dict[str, list[float]] = {}
    for r in system.runs:
        if benchmark not in r.results:
            continue
        df = r.results[benchmark].per_language
        if column not in df:
            continue
        for lang, v in zip(df["language"], df[column], strict=True):
            if v == v:  # not NaN
                vals.setdefault(lang, []).append(float(v))
    return {k: float(np.mean(v)) for k, v in vals.items()}


def language_attr(system: System, benchmark: str, column: str) -> dict[str, str]:
    df = system.runs[0].results[benchmark].per_language
    return dict(zip(df["language"], df[column].astype(str), strict=True)) if column in df else {}


def systems_table(runs: list[Any]) -> list[dict[str, Any]]:
    """What each system is, as the findings read it from the configs."""
    return [{"system": s.label, "model": ", ".join(scored_model_names(s.runs[0].config)), "family": s.family or "other",
             "size": s.size or "?", "setting": s.setting, "seeds": ",".join(str(r.seed) for r in s.runs),
             "runs": ", ".join(r.label for r in s.runs)}
            for s in make_systems(seed_groups(runs))]
