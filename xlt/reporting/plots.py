"""Plots of one run's results (matplotlib, Agg): written as PNG files under ``run/plots/``.

Figures are made with matplotlib's object-oriented API (:class:`matplotlib.figure.Figure`, drawn by Agg when
saved), never through ``pyplot``: no global figure state, no backend to choose, and a third less import time,
paid by every run's report stage.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from xlt.reporting.tables import BenchmarkResults


def _axes(figsize: tuple[float, float]):
    fig = Figure(figsize=figsize)
    return fig, fig.subplots()


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(tmp, dpi=120, bbox_inches="tight")
    tmp.replace(path)
    return path


def per_language(res: BenchmarkResults, out: Path) -> Path:
    """Accuracy per language, sorted, with 95% bootstrap intervals and the chance line."""
    df = res.per_language.sort_values("accuracy", ascending=False)
    fig, ax = _axes((max(6, 0.18 * len(df) + 2), 4))
    err = [df["accuracy"] - df["ci_low"], df["ci_high"] - df["accuracy"]]
    ax.bar(df["language"], df["accuracy"], yerr=err, color="#4C72B0", capsize=1.5)
    ax.axhline(res.chance, color="grey", ls="--", lw=1, label=f"chance ({res.chance:.0f})")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"{res.heading}: accuracy per language (mean {res.summary['mean']:.1f})")
    ax.tick_params(axis="x", labelrotation=90, labelsize=7)
    ax.legend(loc="upper right")
    return _save(fig, out / f"{res.name}_per_language.png")


def grouped(res: BenchmarkResults, by: str, out: Path) -> Path:
    """Mean accuracy over languages per group of ``by`` (one of the definition's language groupings)."""
    g = res.per_language.groupby(by)["accuracy"].agg(["mean", "count"]).sort_values("mean", ascending=False)
    fig, ax = _axes((max(5, 0.35 * len(g) + 2), 3.5))
    ax.bar([f"{i} ({c})" for i, c in zip(g.index, g["count"], strict=True)], g["mean"], color="#55A868")
    ax.axhline(res.chance, color="grey", ls="--", lw=1)
    ax.set_ylabel("mean accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"{res.heading}: by {res.definition.report.label(by)} (number of languages)")
    ax.tick_params(axis="x", labelrotation=60, labelsize=8)
    return _save(fig, out / f"{res.name}_by_{by}.png")


def contrast(res: BenchmarkResults, out: Path) -> Path | None:
    """The definition's contrast (two subsets, e.g. A vs B) side by side per language."""
    pair = res.definition.report.contrast
    df = res.per_language
    if pair is None or any(f"acc_{s}" not in df for s in pair):
        return None
    a, b = pair
    df = df.sort_values("accuracy", ascending=False)
    x = range(len(df))
    fig, ax = _axes((max(6, 0.3 * len(df) + 2), 4))
    ax.bar([i - 0.2 for i in x], df[f"acc_{a}"], width=0.4, label=res.definition.report.label(a), color="#C44E52")
    ax.bar([i + 0.2 for i in x], df[f"acc_{b}"], width=0.4, label=res.definition.report.label(b), color="#8172B2")
    ax.set_xticks(list(x), df["language"], rotation=90, fontsize=8)
    ax.axhline(res.chance, color="grey", ls="--", lw=1)
    ax.set_ylim(0, 100)
    ax.set_ylabel("accuracy (%)")
    ax.set_title(f"{res.heading}: {a} vs {b} per language")
    ax.legend()
    return _save(fig, out / f"{res.name}_{a}_vs_{b}.png".lower())


def all_plots(results: dict[str, BenchmarkResults], out: Path) -> list[Path]:
    files: list[Path] = []
    for res in results.values():
        files.append(per_language(res, out))
        files.extend(grouped(res, by, out) for by in res.definition.report.language_groupings if by in res.per_language)
        p = contrast(res, out)
        if p is not None:
            files.append(p)
    return files


def comparison_plot(table: pd.DataFrame, name: str, out: Path, chance: float, heading: str | None = None) -> Path:
    """Side-by-side accuracy per language of several runs (columns = runs), with the chance line; ``heading``
    names the benchmark in the title (default: ``name``, which names the file)."""
    fig, ax = _axes((max(6, 0.3 * len(table) * max(1, len(table.columns)) / 2 + 2), 4))
    table.plot.bar(ax=ax, width=0.8)
    ax.axhline(chance, color="grey", ls="--", lw=1)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"{heading or name}: accuracy per language")
    return _save(fig, out / f"{name}_compare.png")
