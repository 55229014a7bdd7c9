"""Compare several finished runs: ``python -m xlt.report --compare RUN_DIR... --out DIR``.

Writes to ``DIR``: ``compare.md``, ``compare.json`` and CSVs with

* side-by-side accuracy per language and benchmark (one column per run), plus a plot per benchmark;
* per-language differences of every run against the first (the baseline), with a paired bootstrap test
  on the questions both runs answered (difference, 95% interval, p-value, significant at 0.05);
* seed groups: runs whose ``config.yaml`` differs only in ``seed`` are one system; mean ± std over the
  seeds of each benchmark's mean accuracy (and per language);
* Global-MMLU rankings: the systems ranked on full, MA, CS and CA, each system's rank per subset, and
  for each pair of subsets the number of rank changes and the mean absolute position shift (as the
  Global-MMLU paper compares rankings on CS vs CA);
* the seed papers' findings, each holds / does not hold / cannot be tested (:mod:`xlt.reporting.findings`),
  and ``compare.html``, the self-contained page of all of it (:mod:`xlt.reporting.html`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from xlt.data.benchmarks import get_benchmark
from xlt.errors import DataError
from xlt.reporting.findings import add_findings
from xlt.reporting.html import write_compare_page
from xlt.reporting.plots import comparison_plot
from xlt.reporting.render import markdown_table
from xlt.reporting.tables import BenchmarkResults, load_run_results
from xlt.run import RunDir, atomic_write_text
from xlt.scoring.metrics import paired_bootstrap
from xlt.scoring.results import Job, read_predictions

# Config keys that do not change what a run computes (ignored when grouping runs by config).
RANK_SUBSETS = ("full", "MA", "CS", "CA")


def run_label(path: Path) -> str:
    """``<recipe>/<overrides>`` for a run dir under ``runs/``."""
    path = path.resolve()
    return f"{path.parent.name}/{path.name}"


def read_config(path: Path) -> dict[str, Any]:
    cfg_file = path / "config.yaml"
    if not cfg_file.is_file():
        raise DataError(f"{cfg_file}: missing; is {path} an xlt run directory?")
    from xlt.state import Damaged, read_text

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
    return cfg


def config_key(cfg: dict[str, Any]) -> str:
    """The run's result-changing config without the seed, as a canonical string: runs that differ only in
    ``seed`` and in keys that change no result (logger, run_root, shard settings; :mod:`xlt.config.keys`)
    are one system."""
    from xlt.config.keys import result_values

    return json.dumps(result_values(cfg, drop=("seed",)), sort_keys=True, default=str)


class RunInfo:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.label = run_label(self.path)
        self.config = read_config(self.path)
        self.seed = self.config.get("seed")
        self.key = config_key(self.config)
        self.results: dict[str, BenchmarkResults] = load_run_results(self.path)


def side_by_side(runs: list[RunInfo], benchmark: str) -> pd.DataFrame:
    cols = {}
    for r in runs:
        if benchmark in r.results:
            cols[r.label] = r.results[benchmark].per_language.set_index("language")["accuracy"]
    table = pd.DataFrame(cols)
    table.index.name = "language"
    return table.sort_index()


def paired_differences(runs: list[RunInfo], benchmark: str, samples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Every run against the first, per language, on the shared questions."""
    base = runs[0]
    rows = []
    if benchmark not in base.results:
        return pd.DataFrame()
    kind = base.results[benchmark].kind
    for other in runs[1:]:
        if benchmark not in other.results:
            continue
        shared = set(base.results[benchmark].per_language["language"]) & set(other.results[benchmark].per_language["language"])
        for lang in sorted(shared):
            job = Job(benchmark, lang, kind)
            pa = {p["id"]: p["prediction"] == p["gold"] for p in read_predictions(RunDir(base.path), job)}
            pb = {p["id"]: p["prediction"] == p["gold"] for p in read_predictions(RunDir(other.path), job)}
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


def system_subset_scores(groups: list[list[RunInfo]], benchmark: str) -> pd.DataFrame:
    """Global-MMLU: per system (seed group), the mean over seeds of each subset's mean over languages."""
    rows = []
    for g in groups:
        vals = {s: [r.results[benchmark].summary.get(s) for r in g if benchmark in r.results] for s in RANK_SUBSETS}
        row: dict[str, Any] = {"system": group_label(g)}
        for s, v in vals.items():
            v = [x for x in v if x is not None]
            row[s] = float(np.mean(v)) if v else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def rankings(scores: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ranks per subset (1 = best; ties share the best rank) and rank changes between subsets."""
    ranks = scores[["system"]].copy()
    for s in RANK_SUBSETS:
        ranks[f"rank_{s}"] = scores[s].rank(ascending=False, method="min").astype("Int64")
    pairs = [("full", "MA"), ("MA", "CS"), ("MA", "CA"), ("CS", "CA")]
    rows = []
    for a, b in pairs:
        if scores[a].isna().any() or scores[b].isna().any():
            continue
        shift = (ranks[f"rank_{b}"] - ranks[f"rank_{a}"]).astype(float)
        ranks[f"shift_{a}_to_{b}"] = shift.astype("Int64")
        rows.append({"from": a, "to": b, "rank_changes": int((shift != 0).sum()),
                     "mean_abs_position_shift": float(shift.abs().mean())})
    return ranks, pd.DataFrame(rows)


def compare_runs(run_dirs: list[str | Path], out: str | Path, samples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Compare ``run_dirs`` (the first is the baseline) and write the comparison files under ``out``."""
    if len(run_dirs) < 2:
        raise DataError("--compare needs at least two run directories")
    seen: dict[Path, str] = {}
    for p in run_dirs:
        real = Path(p).expanduser().resolve()
        if real in seen:
            raise DataError(f"--compare: {p} is the same run directory as {seen[real]}; a run counted twice would "
                            "pass for two seeds. Give each run once")
        seen[real] = str(p)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise DataError(f"--out {out}: is a file; give a folder (it is created if missing)")
    runs = [RunInfo(Path(p)) for p in run_dirs]
    benchmarks = sorted({b for r in runs for b in r.results})
    groups = seed_groups(runs)
    md = ["# Comparison of runs\n", "\nRuns (baseline first): " + ", ".join(f"`{r.label}`" for r in runs) + "\n"]
    payload: dict[str, Any] = {"runs": [r.label for r in runs], "benchmarks": {}}
    for bench in benchmarks:
        sbs = side_by_side(runs, bench)
        diffs = paired_differences(runs, bench, samples, seed)
        seeds = seed_summary(groups, bench)
        atomic_write_text(out / f"{bench}_side_by_side.csv", sbs.to_csv())
        atomic_write_text(out / f"{bench}_differences.csv", diffs.to_csv(index=False))
        atomic_write_text(out / f"{bench}_seeds.csv", seeds.to_csv(index=False))
        comparison_plot(sbs, bench, out)
        entry: dict[str, Any] = {"side_by_side": sbs.reset_index().to_dict(orient="records"),
                                 "differences": diffs.to_dict(orient="records"),
                                 "seeds": seeds.to_dict(orient="records")}
        md += [f"\n## {bench}\n", "\n### accuracy per language\n\n", markdown_table(sbs.reset_index()),
               "\n### differences vs baseline (paired bootstrap)\n\n", markdown_table(diffs, digits=3) if len(diffs) else "none\n",
               "\n### mean ± std over seeds\n\n", markdown_table(seeds, digits=2)]
        kind = next(r.results[bench].kind for r in runs if bench in r.results)
        if get_benchmark(kind).has_subsets:
            scores = system_subset_scores(groups, bench)
            ranks, changes = rankings(scores)
            atomic_write_text(out / f"{bench}_rankings.csv", scores.merge(ranks, on="system").to_csv(index=False))
            entry["rankings"] = scores.merge(ranks, on="system").astype(object).to_dict(orient="records")
            entry["rank_changes"] = changes.to_dict(orient="records")
            md += ["\n### rankings on full, MA, CS, CA\n\n", markdown_table(scores.merge(ranks, on="system")),
                   "\n### rank changes between subsets\n\n", markdown_table(changes, digits=2)]
        payload["benchmarks"][bench] = entry
    md.append(add_findings(runs, payload, samples, seed))  # the papers' findings (xlt/reporting/findings.py)
    atomic_write_text(out / "compare.md", "".join(md))
    atomic_write_text(out / "compare.json", json.dumps(_clean(payload), indent=2, ensure_ascii=False, default=str) + "\n")
    write_compare_page(out / "compare.html", runs, _clean(payload))
    return payload


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    if isinstance(obj, float) and obj != obj:
        return None
    if obj is pd.NA:
        return None
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return None if np.isnan(obj) else float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj
