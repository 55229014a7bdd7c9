"""Finished runs read and tabulated for ``python -m xlt.report --compare RUN_DIR... --out DIR``.

The tables (written to ``DIR`` by :mod:`xlt.reporting.compare_runs` as ``compare.md``, ``compare.json`` and CSVs):

* side-by-side accuracy per language and benchmark (one column per run), plus a plot per benchmark;
* per-language differences of every run against the first (the baseline), with a paired bootstrap test
  on the questions both runs answered (difference, 95% interval, p-value, significant at 0.05);
* seed groups: runs whose ``config.yaml`` differs only in ``seed`` are one system; mean ± std over the
  seeds of each benchmark's mean accuracy (and per language);
* tokenizer measures per language, systems side by side (fertility, continued words, premium against
  English, unknown-piece rate; :mod:`xlt.scoring.tokenizer_measures`), beside each system's accuracy;
* rankings, for a benchmark whose definition declares ``rank_subsets``: the systems ranked on each of
  those subsets, each system's rank per subset, and for each of its ``rank_pairs`` the number of rank
  changes and the mean absolute position shift (as a paper compares rankings between two subsets);
beside the findings the benchmarks declare (:mod:`xlt.reporting.findings`) and ``compare.html``, the
self-contained page of all of it (:mod:`xlt.reporting.html`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from omegaconf import OmegaConf

from xlt import languages as langtab
from xlt.config import STAGES, register
from xlt.config.keys import result_values, stage_values
from xlt.errors import DataError
from xlt.metrics import paired_bootstrap
from xlt.registry import BENCHMARKS, include
from xlt.reporting.tables import BenchmarkResults, load_run_results
from xlt.run.layout import PLAN_FILE, RunDir
from xlt.run.results import NoPerQuestionData, item_correct, read_predictions
from xlt.run.state import Damaged, read_text
from xlt.scoring.tokenizer_measures import COLUMNS as TOKENIZER_COLUMNS
from xlt.secrets import REDACTED


def run_label(path: Path) -> str:
    """``<recipe>/<overrides>`` for a run dir under ``runs/``."""
    path = path.resolve()
    return f"{path.parent.name}/{path.name}"


def _recorded(path: Path) -> dict[str, dict[str, Any]]:
    """Per stage that ran, the config values its done-marker recorded (what the stage really ran with)."""
    run, out = RunDir(path), {}
    for stage in STAGES:
        try:
            detail = run.done_info(stage).get("provenance", {}).get("detail")
        except Damaged:
            continue
        if isinstance(detail, dict) and isinstance(detail.get("config"), dict):
            out[stage] = detail["config"]
    return out


# The resolvers a compared run's config.yaml may have run here: they only compute a value from their arguments
# (xlt's and OmegaConf's own). Any other (``xlt_run_root``: checks, creates folders, exits; ``oc.env``: reads the
# comparing user's environment; ``hydra``, ``now``, a definition file's) is left as the text the file holds.
INERT_RESOLVERS = frozenset({"xlt_assets", "xlt_model_name", "xlt_run_name", "xlt_languages", "oc.select",
                             "oc.decode", "oc.create", "oc.dict.keys", "oc.dict.values"})
_RESOLVER_CALL = re.compile(r"\$\{\s*([A-Za-z_][\w.\-]*)\s*:")
_UNESCAPED = re.compile(r"(?<!\\)\$\{")


def _leave_acting(value: Any) -> Any:
    """``value`` (a config.yaml mapping, list or leaf) with every string that calls a resolver outside
    :data:`INERT_RESOLVERS` escaped (``\\${``): resolving the rest keeps that string as the text it is."""
    if isinstance(value, dict):
        return {k: _leave_acting(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_leave_acting(v) for v in value]
    if isinstance(value, str) and any(name not in INERT_RESOLVERS for name in _RESOLVER_CALL.findall(value)):
        return _UNESCAPED.sub(r"\\${", value)
    return value


def recorded_values(recorded: dict[str, Any], cfg_file: Path) -> dict[str, Any]:
    """A compared run's config (``recorded``: its config.yaml as read) as the values it records: xlt writes config.yaml resolved, but a hand-written or
    older one may hold interpolations (``${xlt_assets:}/...``). Only :data:`INERT_RESOLVERS` run: nothing of the
    comparing user's (folders, environment, ``sys.exit``) is touched or read. One that cannot resolve is a
    :class:`DataError` naming that run's file."""
    register()  # xlt's inert resolvers (xlt_assets, ...); the acting ones are never reached (_leave_acting)
    try:
        return OmegaConf.to_container(OmegaConf.create(_leave_acting(recorded)), resolve=True)
    except Exception as err:  # noqa: BLE001 - OmegaConf's grammar, key and resolver errors, and a resolver's own
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DataError(f"{cfg_file}: an interpolation cannot be resolved ({first}); this run cannot be compared "
                        "(rerun a stage of it to rewrite config.yaml, or leave it out of --compare)") from None


def _edited_key(cfg: dict[str, Any], recorded: dict[str, dict[str, Any]]) -> str | None:
    """A key whose value in ``config.yaml`` (:func:`recorded_values`) is not the one a stage ran with (None:
    they agree). A value still holding an interpolation there (an acting resolver's, left as text) is an edit
    too when it is not what the stage ran with: xlt writes config.yaml resolved."""
    for stage, values in recorded.items():
        now = json.loads(json.dumps(stage_values(cfg, stage), default=str))
        for key, value in values.items():
            mine = now.get(key, value)
            if mine != value and mine != REDACTED:
                return f"{key}={mine!r} there, while the {stage} stage ran with {value!r}"
    return None


def read_config(path: Path) -> dict[str, Any]:
    """The run's ``config.yaml``, checked against what its stages recorded in their done-markers: an edited or
    deleted config is an error naming the file and the fix, never a run grouped or labelled by edited values."""
    cfg_file = RunDir(path).config
    if not cfg_file.is_file():
        if _recorded(path):
            raise DataError(f"{cfg_file}: deleted after the run (its stages are done); rerun a stage of it to "
                            "rewrite config.yaml (force=true stages=[report] with its recipe and overrides), "
                            "or leave it out of --compare")
        raise DataError(f"{cfg_file}: missing; is {path} an xlt run directory?")

    try:
        cfg = yaml.safe_load(read_text(cfg_file) or "")
    except Damaged as err:
        raise DataError(f"{err}; this run cannot be compared (rerun it, or leave it out of --compare)") from None
    except yaml.YAMLError as err:
        raise DataError(f"{cfg_file}: damaged, not YAML ({str(err).splitlines()[0]}); this run cannot be compared "
                        "(rerun a stage of it to rewrite config.yaml, or leave it out of --compare)") from None
    if not isinstance(cfg, dict):
        raise DataError(f"{cfg_file}: damaged, not a mapping of config keys; this run cannot be compared "
                        "(rerun a stage of it to rewrite config.yaml, or leave it out of --compare)")
    values = recorded_values(cfg, cfg_file)
    edited = _edited_key(values, _recorded(path))
    if edited:
        raise DataError(f"{cfg_file}: edited after the run ({edited}); restore it, or rerun a stage of the run "
                        "to rewrite it (force=true stages=[report] with its recipe and overrides), or leave it out "
                        "of --compare")
    return cfg


def config_key(cfg: dict[str, Any]) -> str:
    """The run's result-changing config without the seed, as a canonical string: runs that differ only in
    ``seed`` and in keys that change no result (logger, run_root, shard settings; :mod:`xlt.config.keys`)
    are one system."""
    return json.dumps(result_values(cfg, drop=("seed",)), sort_keys=True, default=str)


def _plan_kinds(path: Path) -> dict[str, str]:
    """The benchmark kind of each evaluated benchmark of the run (its ``eval/<name>/plan.json``; an unreadable
    plan is left to the results reader, which names it)."""
    out = {}
    for plan in sorted(RunDir(path).eval.glob(f"*/{PLAN_FILE}")):
        try:
            data = json.loads(plan.read_text())
            out[str(data["benchmark"])] = str(data["kind"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def include_allowed(path: Path, folders: list[str], allowed: Sequence[str | Path]) -> None:
    """Register the definitions in the run's ``eval.include_path`` folders that the user allowed (``allowed``:
    ``--include-path`` folders); a comparison runs no other code of the runs it compares. A benchmark of a
    kind that no registry holds then is a :class:`DataError` naming the run, the folder and how to allow it."""
    ok = {Path(str(a)).expanduser().resolve() for a in allowed}
    include([f for f in folders if Path(str(f)).expanduser().resolve() in ok])
    withheld = [str(f) for f in folders if Path(str(f)).expanduser().resolve() not in ok]
    missing = {name: kind for name, kind in _plan_kinds(path).items() if kind not in BENCHMARKS}
    if missing:
        what = ", ".join(f"{name!r} (kind {kind!r})" for name, kind in sorted(missing.items()))
        where = (f"; the run defined it in a file of its eval.include_path ({', '.join(withheld)}), and --compare "
                 "runs no code of the runs it compares unless asked: pass --include-path "
                 f"{' --include-path '.join(withheld)} to run that folder's *.py files (only if you trust them)"
                 if withheld else "")
        raise DataError(f"{path}: its benchmark {what} has no definition here{where}; or install the definition "
                        "as a package (entry point group xlt.benchmarks), or leave the run out of --compare")


class RunInfo:
    """A compared system: a run directory, its config and its results by benchmark.

    ``harness``: the lm-evaluation-harness output folder the run directory was written from
    (:func:`xlt.reporting.harness.imported.harness_system`; None: an xlt run); such a system is labelled
    ``harness:<folder>`` and is never one seed group with an xlt run. ``per_question``: whether its results have
    per-question predictions (a harness folder without sample logs has not: the paired differences, the item
    report and the findings leave it out)."""

    path: Path
    label: str
    key: str
    harness: Path | None
    per_question: bool

    def __init__(self, path: Path, include_paths: Sequence[str | Path] = (), *, harness: str | Path | None = None,
                 per_question: bool = True):
        self.path = Path(path)
        self.harness = None if harness is None else Path(harness)
        self.per_question = per_question
        self.label = run_label(self.path) if self.harness is None else f"harness:{run_label(self.harness)}"
        self.config = read_config(self.path)
        self.seed = self.config.get("seed")
        self.key = config_key(self.config) if self.harness is None else f"harness:{self.harness.resolve()}"
        # The run's own definition folders are run only when the user names them (``include_paths``);
        # a benchmark defined there is then named and read as in the run.
        include_allowed(self.path, list((self.config.get("eval") or {}).get("include_path") or []), include_paths)
        # Resource levels as the run's own report groups them (its eval.resource_groups file, if any).
        grouping = (self.config.get("eval") or {}).get("resource_groups")
        try:
            groups = langtab.read_groups(grouping) if grouping else None
        except DataError as err:
            raise DataError(f"{self.path}: its eval.resource_groups: {err}; restore the file, or leave the run "
                            "out of --compare") from None
        self.results: dict[str, BenchmarkResults] = load_run_results(self.path, groups)


def side_by_side(runs: list[RunInfo], benchmark: str) -> pd.DataFrame:
    cols = {}
    for r in runs:
        if benchmark in r.results:
            cols[r.label] = r.results[benchmark].per_language.set_index("language")["accuracy"]
    table = pd.DataFrame(cols)
    table.index.name = "language"
    return table.sort_index()


def tokenizer_side_by_side(groups: list[list[RunInfo]], benchmark: str) -> pd.DataFrame:
    """Per language, each system's tokenizer measures (:mod:`xlt.scoring.tokenizer_measures`) side by side:
    one row per language and system, with its accuracy (the mean over its seeds; the tokenizer is the same
    for every seed). Empty when no system's results carry them."""
    rows = []
    for g in groups:
        with_it = [r for r in g if benchmark in r.results and "premium" in r.results[benchmark].per_language]
        if not with_it:
            continue
        df = with_it[0].results[benchmark].per_language
        acc = pd.concat([r.results[benchmark].per_language.set_index("language")["accuracy"] for r in with_it], axis=1)
        mean = acc.mean(axis=1)
        for row in df.to_dict(orient="records"):
            rows.append({"language": row["language"], "system": group_label(g), "accuracy": float(mean[row["language"]]),
                         **{c: row.get(c) for c in TOKENIZER_COLUMNS}})
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).sort_values(["language", "system"], kind="stable").reset_index(drop=True)


def paired_differences(runs: list[RunInfo], benchmark: str, samples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Every run against the first, per language, on the shared questions."""
    base = runs[0]
    rows = []
    if benchmark not in base.results:
        return pd.DataFrame()
    for other in runs[1:]:
        if benchmark not in other.results:
            continue
        shared = set(base.results[benchmark].per_language["language"]) & set(other.results[benchmark].per_language["language"])
        for lang in sorted(shared):
            try:
                pa = {p["id"]: item_correct(p) for p in read_predictions(RunDir(base.path), benchmark, lang)}
                pb = {p["id"]: item_correct(p) for p in read_predictions(RunDir(other.path), benchmark, lang)}
            except NoPerQuestionData as err:  # a harness folder without sample logs: no pairs, said so
                rows.append({"language": lang, "run": other.label, "baseline": base.label, "n": 0, "diff": None,
                             "ci_low": None, "ci_high": None, "p_value": None, "significant": False,
                             "note": f"not paired: {err}"})
                continue
            ids = sorted(set(pa) & set(pb))
            test = paired_bootstrap([pa[i] for i in ids], [pb[i] for i in ids], samples, seed)
            rows.append({"language": lang, "run": other.label, "baseline": base.label, "n": len(ids), **test,
                         "significant": bool(test["p_value"] < 0.05)})
    return pd.DataFrame(rows)


def seed_groups(runs: list[RunInfo]) -> list[list[RunInfo]]:
    """Runs grouped by config-without-seed, in order of first appearance."""
    groups: dict[str, list[RunInfo]] = {}
    for r in runs:
        groups.setdefault(r.key, []).append(r)
    return list(groups.values())


def group_label(group: list[RunInfo]) -> str:
    if len(group) == 1:
        return group[0].label
    return f"{group[0].label} (+{len(group) - 1} seeds)"


def seed_summary(groups: list[list[RunInfo]], benchmark: str) -> pd.DataFrame:
    rows = []
    for g in groups:
        means = [r.results[benchmark].summary["mean"] for r in g if benchmark in r.results]
        if not means:
            continue
        rows.append({"system": group_label(g), "runs": len(means), "seeds": ",".join(str(r.seed) for r in g),
                     "mean": float(np.mean(means)), "std": float(np.std(means, ddof=1)) if len(means) > 1 else 0.0})
    return pd.DataFrame(rows)


def system_subset_scores(groups: list[list[RunInfo]], benchmark: str, subsets: Sequence[str]) -> pd.DataFrame:
    """Per system (seed group) evaluated on ``benchmark``, each subset's mean over the languages *every* such system has (a system evaluated
    on more or easier languages must not rank higher for it) of the mean over its seeds; ``languages``
    counts them. A subset's per-language accuracy is the result's ``acc_<subset>`` (``accuracy`` for
    ``full``); no shared language gives NaN."""
    groups = [g for g in groups if any(benchmark in r.results for r in g)]  # systems not evaluated on it: no rank
    per: list[dict[str, dict[str, float]]] = []
    for g in groups:
        vals: dict[str, dict[str, list[float]]] = {s: {} for s in subsets}
        for r in g:
            if benchmark not in r.results:
                continue
            df = r.results[benchmark].per_language
            for s in subsets:
                col = f"acc_{s}" if f"acc_{s}" in df else "accuracy" if s == "full" else None
                if col is None:
                    continue
                for lang, v in zip(df["language"], df[col], strict=True):
                    if v == v:
                        vals[s].setdefault(lang, []).append(float(v))
        per.append({s: {lang: float(np.mean(v)) for lang, v in vals[s].items()} for s in subsets})
    shared = sorted(set.intersection(*(set(p[s]) for p in per for s in subsets))) if per and subsets else []
    rows = []
    for g, p in zip(groups, per, strict=True):
        row: dict[str, Any] = {"system": group_label(g)}
        for s in subsets:
            row[s] = float(np.mean([p[s][lang] for lang in shared])) if shared else float("nan")
        row["languages"] = len(shared)
        rows.append(row)
    return pd.DataFrame(rows)


def rankings(scores: pd.DataFrame, subsets: Sequence[str],
             pairs: Sequence[tuple[str, str]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ranks per subset (1 = best; ties share the best rank) and rank changes between the pairs of subsets."""
    ranks = scores[["system"]].copy()
    for s in subsets:
        ranks[f"rank_{s}"] = scores[s].rank(ascending=False, method="min").astype("Int64")
    rows = []
    for a, b in pairs:
        if scores[a].isna().any() or scores[b].isna().any():
            continue
        shift = (ranks[f"rank_{b}"] - ranks[f"rank_{a}"]).astype(float)
        ranks[f"shift_{a}_to_{b}"] = shift.astype("Int64")
        rows.append({"from": a, "to": b, "rank_changes": int((shift != 0).sum()),
                     "mean_abs_position_shift": float(shift.abs().mean())})
    return ranks, pd.DataFrame(rows)
