"""Self-contained HTML pages of a run (``report.html``) and of a comparison (``compare.html``).

One file each, viewable offline: the page's data is inlined as JSON in a
``<script type="application/json">`` element, and the small vanilla-JS renderer and its style sheet
(``xlt/reporting/web/``, package data) are inlined too; nothing is fetched at view time. The renderer
draws, from the JSON, sortable and filterable tables (click a header to sort; selects per language
column: script, family and the benchmark's groupings; a text search) and inline SVG bar charts with hover tooltips
(language, value, interval). Every string reaches the page through ``textContent`` (never parsed as
HTML), and the inlined JSON has ``<``, ``>`` and ``&`` escaped, so no value can close the script element.

A page is a dict: ``title``, ``subtitle``, ``meta`` ([label, value] pairs), ``notes`` and ``sections``
(each a ``title`` and ``blocks``); a block is a ``kv`` list, a ``text``, a ``table`` (``columns`` with
``key``, ``label``, ``kind`` in text/num/int/ci/diff/pm/bool/verdict and optional ``filter``; ``rows``),
a ``bars`` chart (``series`` of bars with ``label``, ``value``, optional ``low``/``high``/``tip``), a
``findings`` list or ``items`` (items of a benchmark side by side in two languages, each text with its
``dir``).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from xlt import __version__
from xlt import languages as langtab
from xlt.config.eval import EvalConfig
from xlt.config.model import ModelConfig
from xlt.run.files import atomic_write_text, json_text, strict_json
from xlt.run.layout import RunDir
from xlt.run.results import first_result
from xlt.run.state import REPORT, Damaged, read_state
from xlt.scoring.before import COLUMN as BEFORE
from xlt.scoring.declaration import names_run_model
from xlt.scoring.tokenizer_measures import COLUMNS as TOKENIZER_COLUMNS

WEB = Path(__file__).resolve().parent / "web"


def script_json(data: Any) -> str:
    """JSON safe to inline in ``<script type="application/json">`` (no ``</script>``, no ``<!--``)."""
    text = json_text(data, indent=None, separators=(",", ":"))
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(a, b)
    return text


def render_page(page: dict[str, Any]) -> str:
    """The complete HTML document of ``page`` (template, style, data and script inlined)."""
    js = (WEB / "page.js").read_text(encoding="utf-8")
    css = (WEB / "page.css").read_text(encoding="utf-8")
    if re.search(r"</(script|style)", js + css, re.I):
        raise ValueError("xlt/reporting/web: an asset contains a closing script/style tag")
    parts = {"title": html.escape(str(page.get("title", "xlt"))), "css": css, "js": js, "data": script_json(page)}
    template = (WEB / "page.html").read_text(encoding="utf-8")
    # One pass: an inlined part that happens to contain "{{js}}" is not substituted again.
    return re.sub(r"\{\{(\w+)\}\}", lambda m: parts[m.group(1)], template)


def write_page(path: Path, page: dict[str, Any]) -> Path:
    atomic_write_text(path, render_page(page))
    return path


# --- building blocks ---------------------------------------------------------------------------------

_FILTERED = {"setting", "family_model", "verdict", "paper"}


def col(key: str, label: str | None = None, kind: str = "text", **extra: Any) -> dict[str, Any]:
    c = {"key": key, "label": label or key, "kind": kind, **extra}
    if kind == "text" and key in _FILTERED:
        c["filter"] = True
    return c


def table(id_: str, title: str, columns: list[dict[str, Any]], rows: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"type": "table", "id": id_, "title": title, "columns": columns, "rows": strict_json(rows), **extra}


def frame_table(id_: str, title: str, df: pd.DataFrame) -> dict[str, Any]:
    """A table block of a small DataFrame (kinds from dtypes)."""
    cols = []
    for c in df.columns:
        kind = "text"
        if pd.api.types.is_bool_dtype(df[c]):
            kind = "bool"
        elif pd.api.types.is_integer_dtype(df[c]):
            kind = "int"
        elif pd.api.types.is_float_dtype(df[c]):
            kind = "num"
        cols.append({**col(str(c), str(c), kind), "filter": False})
    return table(id_, title, cols, df.to_dict(orient="records"), search=False)


def bars(id_: str, title: str, series: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"type": "bars", "id": id_, "title": title, "series": strict_json(series), **extra}


def _interval_tip(name: str, code: str, value: float, low: Any, high: Any, what: str = "accuracy") -> str:
    if value is None or value != value:
        return f"{name} ({code}): no value"
    ci = f" [{low:.1f}, {high:.1f}]" if isinstance(low, (int, float)) and isinstance(high, (int, float)) \
        and low == low and high == high else ""
    return f"{name} ({code}): {what} {value:.1f}{ci}"


def provenance_rows(prov: dict[str, Any] | None) -> list[list[str]]:
    """[label, value] rows of a provenance record (:meth:`xlt.contract.StageContext.record`)."""
    if not prov:
        return [["provenance", "not recorded"]]
    rows = [["xlt version", str(prov.get("xlt_version", "?"))], ["stage", str(prov.get("stage", "?"))],
            ["config / inputs hash", str(prov.get("inputs", "?"))]]
    if prov.get("model") is not None:
        rows.append(["model fingerprint", json.dumps(prov["model"], sort_keys=True, default=str)])
    for k, v in sorted((prov.get("data") or {}).items()):
        rows.append([f"data: {k}", json.dumps(v, sort_keys=True, default=str) if not isinstance(v, str) else v])
    for k, v in sorted((prov.get("upstream") or {}).items()):
        rows.append([f"upstream {k} output id", str(v)])
    return rows


# --- report.html ---------------------------------------------------------------------------------------


def info_columns(res: Any) -> list[str]:
    """The per-language text columns a page shows and filters by: script, family and the definition's groupings."""
    df = res.per_language
    return [c for c in dict.fromkeys(("script", "family", *res.definition.report.language_groupings)) if c in df]


def benchmark_blocks(name: str, res: Any) -> list[dict[str, Any]]:
    """A benchmark's blocks of ``report.html``, from its definition: the per-language table (its language
    columns as filters, accuracy with interval, each subset), accuracy bars per language (each subset a
    selectable series) and mean accuracy per grouping, with the results' chance level."""
    declared = res.definition.report  # subsets, groupings, labels
    df = res.per_language.sort_values("accuracy", ascending=False)
    subsets = [s for s in declared.subset_names if f"acc_{s}" in df]
    show_code = "code" in df and (df["code"].astype(str) != df["language"].astype(str)).any()
    columns = [col("name", "language"), col("language", "code"), *([col("code", "language-table code")] if show_code else []),
               *[col(c, declared.label(c), filter=True) for c in info_columns(res)],
               col("accuracy", "accuracy (95% CI)", "ci", low="ci_low", high="ci_high"),
               *([col(BEFORE, "before fine-tuning", "num")] if BEFORE in df else []),
               # LLM results over several few-shot draws (eval.llm.protocol=paper): each draw, their spread
               *([col("draw_accuracies", "draws"), col("draw_std", "draw std", "num"), col("draw_min", "draw min", "num"),
                  col("draw_max", "draw max", "num")] if "draws" in df else []),
               *[col(f"acc_{s}", s, "num") for s in subsets],
               *[col(c, c.replace("_", " "), "num", digits=3) for c in TOKENIZER_COLUMNS if c in df], col("n", "n", "int"),
               col("odd_items", "odd items", "int"), col("ties", "ties", "int")]
    series = [{"name": "accuracy" if not subsets else "full", "bars": [
        {"label": r.language, "value": r.accuracy, "low": r.ci_low, "high": r.ci_high,
         "tip": _interval_tip(r.name, r.language, r.accuracy, r.ci_low, r.ci_high)} for r in df.itertuples()]}]
    if BEFORE in df:  # eval.before_training: the same model before fine-tuning
        series.append({"name": "before fine-tuning", "bars": [
            {"label": r["language"], "value": r[BEFORE], "tip": f"{r['language']}: {r[BEFORE]:.1f} before fine-tuning"}
            for _, r in df.iterrows()]})
    for s in subsets:
        series.append({"name": declared.label(s), "bars": [
            {"label": r["language"], "value": r[f"acc_{s}"], "tip": _interval_tip(r["name"], r["language"], r[f"acc_{s}"],
                                                                                 None, None, s)}
            for _, r in df.iterrows()]})
    group_series = []
    for by in declared.language_groupings:
        if by not in df:
            continue
        g = df.groupby(by)["accuracy"].agg(["mean", "count"]).sort_values("mean", ascending=False)
        group_series.append({"name": f"by {declared.label(by)}", "bars": [
            {"label": str(k), "value": float(v["mean"]),
             "tip": f"{declared.label(by)} {k}: mean {v['mean']:.1f} over {int(v['count'])} language(s)"}
            for k, v in g.iterrows()]})
    title = "per language" + (f" ({', '.join(['full', *subsets])})" if subsets else "")
    blocks = [table(f"{name}-langs", title, columns, df.to_dict(orient="records"), search=True),
              bars(f"{name}-bars", "accuracy per language" + (" and subset (pick the subset)" if subsets else "")
                   + f" (95% bootstrap interval; dashed: chance, {res.chance:.0f})", series, chance=res.chance)]
    if group_series:
        blocks.append(bars(f"{name}-groups", "mean accuracy by group", group_series, chance=res.chance))
    return blocks


def item_blocks(name: str, report: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The cross-language item report's blocks (:mod:`xlt.reporting.items`): the suspect (item, language) pairs
    as a table, then each (the first shown) with its passage, question and options in its language and in a
    reference language side by side (``dir="rtl"`` for a right-to-left script)."""
    if not report:
        return []
    found = report.get("suspects") or []
    systems = report.get("systems") or []
    who = "in this run" if systems == ["this run"] else f"for every system ({', '.join(systems)})"
    title = (f"items that break in one language: wrong {who} where the item is right in at least "
             f"{report.get('share', 0):.0%} of its other languages ({len(found)} found)")
    cols = [col("item"), col("language", filter=True), col("reference language"),
            col("weakest share right elsewhere", kind="num", digits=2),
            col("mean share right elsewhere", kind="num", digits=2), col("other languages", kind="int")]
    blocks = [table(f"{name}-suspects", title, cols, [{k: v for k, v in r.items() if k != "texts"} for r in found],
                    search=True)]
    shown = [r for r in found if r.get("texts")]
    if shown:
        blocks.append({"type": "items", "id": f"{name}-suspect-texts", "title": "the suspects' texts, side by side "
                       "(✓: the gold answer of that language's file)", "items": strict_json(shown)})
    elif found and report.get("texts_missing"):
        blocks.append({"type": "text", "text": f"Texts not shown: {report['texts_missing']}."})
    return blocks


def evaluation_provenance(run_path: Path | None, benchmarks: list[str]) -> list[list[str]]:
    """Per benchmark, the scored model's fingerprint and the data source recorded in its first result."""
    rows: list[list[str]] = []
    for bench in benchmarks if run_path is not None else []:
        first = first_result(run_path, bench)
        lang, result = first if first is not None else ("", {})
        prov = result.get("provenance") if isinstance(result.get("provenance"), dict) else {}
        if prov.get("model") is not None:
            rows.append([f"{bench}: scored model fingerprint", json.dumps(prov["model"], sort_keys=True, default=str)])
        if prov.get("data") is not None:
            rows.append([f"{bench}: data ({lang}; every language in eval/{bench}/<lang>.json)",
                         json.dumps(prov["data"], sort_keys=True, default=str) if not isinstance(prov["data"], str) else prov["data"]])
    return rows


def run_page(eval_cfg: EvalConfig, model: ModelConfig, results: dict[str, Any], provenance: dict[str, Any] | None,
             notes: list[str] | None = None, run_path: Path | None = None, *, recipe_name: str,
             seed: int, items: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The page of one run's report (the same numbers as ``report.md``): its ``eval`` and ``model`` sections,
    recipe name and seed label it."""
    from xlt.reporting.tables import headline, summary_frames  # lazy: start-up time

    scored = eval_cfg.model if not names_run_model(eval_cfg.model) else f"run's model ({model.name_or_path})"
    meta = [["recipe", str(recipe_name)], ["model", str(scored)], ["scorer", str(eval_cfg.scorer)],
            ["seed", str(seed)], ["intervals", f"95% bootstrap, {eval_cfg.bootstrap_samples} resamples"],
            ["xlt", (provenance or {}).get("xlt_version", __version__)]]
    sections = [{"title": "provenance", "blocks": [{"type": "kv", "rows": provenance_rows(provenance)
                                                     + evaluation_provenance(run_path, list(results))}]}]
    for name, res in results.items():
        head = [[label, _num(v) if isinstance(v, float) or v is None else str(v)]
                for label, v in headline(res)]
        blocks: list[dict[str, Any]] = [{"type": "kv", "rows": head, "cards": True}]
        blocks += [frame_table(f"{name}-{t.replace(' ', '-')}", t, f) for t, f in summary_frames(res).items()]
        blocks += benchmark_blocks(name, res)
        blocks += item_blocks(name, (items or {}).get(name))
        sections.append({"title": res.heading, "blocks": blocks})
    return {"title": f"xlt report: {recipe_name}", "subtitle": "accuracies in %", "meta": meta,
            "notes": [n.strip() for n in (notes or []) if n.strip()], "sections": sections}


def _names_another_model(value: Any) -> bool:
    """Whether a compared run's ``eval.model`` (its stored config) names another model than the run's own."""
    return value is not None and not names_run_model(value)


def _num(v: Any) -> str:
    return "n/a" if v is None or v != v else f"{float(v):.1f}"


# --- compare.html --------------------------------------------------------------------------------------


def run_provenance(path: Path) -> dict[str, Any] | None:
    """A run's provenance: its report's, else the first evaluation result's."""
    try:
        report = read_state(RunDir(path).report(), REPORT)
    except Damaged:
        report = None
    if report and report.get("provenance"):
        return report["provenance"]
    for bench in sorted(p.name for p in RunDir(path).eval.glob("*") if p.is_dir()):
        first = first_result(path, bench)
        if first is not None:
            return first[1].get("provenance")
    return None


def language_rows(runs: list[Any], bench: str) -> tuple[dict[str, dict[str, Any]], list[str], Any]:
    """Per language of ``bench``, its name and language columns (from the first run that has it), the
    columns shown, and the benchmark's definition."""
    info: dict[str, dict[str, Any]] = {}
    cols: list[str] = []
    definition = None
    for r in runs:
        if bench not in r.results:
            continue
        res = r.results[bench]
        definition = definition or res.definition
        cols = cols or info_columns(res)
        for row in res.per_language.to_dict(orient="records"):
            info.setdefault(row["language"], {"name": row.get("name", row["language"]),
                                              **{c: str(row.get(c, langtab.UNGROUPED)) for c in cols}})
    return info, cols, definition


def compare_page(runs: list[Any], payload: dict[str, Any]) -> dict[str, Any]:
    """The page of a comparison: findings, runs and their provenance, then per benchmark the side-by-side
    accuracies, differences against the baseline (paired test), seed groups and the rankings its
    definition declares."""
    labels = [r.label for r in runs]
    systems = {s["system"]: s for s in payload.get("systems", [])}
    setting_of = {lab: s["setting"] for s in systems.values() for lab in str(s.get("runs", "")).split(", ")}
    run_rows, notes = [], []
    for r in runs:
        prov = run_provenance(r.path) or {}
        cfg = r.config
        run_rows.append({"run": r.label, "baseline": r is runs[0], "seed": r.seed,
                         "model": (cfg.get("eval") or {}).get("model") if _names_another_model((cfg.get("eval") or {}).get("model"))
                         else (cfg.get("model") or {}).get("name_or_path"),
                         "scorer": (cfg.get("eval") or {}).get("scorer"),
                         "setting": setting_of.get(r.label, ""),
                         "xlt": prov.get("xlt_version", "?"), "config hash": prov.get("inputs", "?"),
                         "model fingerprint": json.dumps(prov.get("model"), sort_keys=True, default=str) if prov.get("model") else "",
                         "data fingerprint": json.dumps(prov.get("data"), sort_keys=True, default=str) if prov.get("data") else ""})
    versions = {row["xlt"] for row in run_rows}
    if len(versions) > 1:
        notes.append(f"runs were produced by different xlt versions: {', '.join(sorted(map(str, versions)))}")
    sections: list[dict[str, Any]] = []
    findings = payload.get("findings", [])
    sections.append({"title": "findings of the papers", "blocks": [
        {"type": "findings", "items": findings},
        table("systems", "systems (read from each run's config; seeds grouped)",
              [col("system"), col("model"), col("family", filter=True), col("size", filter=True), col("setting"), col("seeds")],
              list(systems.values()), search=False)]})
    sections.append({"title": "runs (baseline first)", "blocks": [table("runs", "runs and provenance", [
        col("run"), col("baseline", kind="bool"), col("seed", kind="text"), col("model"), col("scorer", filter=True),
        col("setting", filter=True), col("xlt"), col("config hash"), col("model fingerprint"), col("data fingerprint")],
        run_rows, search=True)]})
    for bench, entry in payload.get("benchmarks", {}).items():
        sections.append({"title": entry.get("heading", bench), "blocks": _compare_blocks(bench, entry, runs, labels, notes)})
    return {"title": "xlt comparison", "subtitle": f"{len(runs)} runs; baseline {labels[0]}; accuracies in %",
            "meta": [["runs", str(len(runs))], ["baseline", labels[0]], ["systems (seed groups)", str(len(systems))],
                     ["xlt (this page)", __version__]],
            "notes": notes, "sections": sections}


def _compare_blocks(bench: str, entry: dict[str, Any], runs: list[Any], labels: list[str], notes: list[str]) -> list[dict[str, Any]]:
    info, groupings, definition = language_rows(runs, bench)

    def lang_info(code: str) -> dict[str, Any]:
        return info.get(code, {"name": code, **dict.fromkeys(groupings, langtab.UNGROUPED)})

    for r in runs:  # LLM numbers that cannot stand beside lm-evaluation-harness's (see report.md)
        df = r.results[bench].per_language if bench in r.results else None
        if df is not None and "comparable_to_harness" in df and (~df["comparable_to_harness"].astype(bool)).any():
            bad = df[~df["comparable_to_harness"].astype(bool)]
            notes.append(f"{bench}, {r.label}: {len(bad)} language(s) not comparable with lm-evaluation-harness "
                         f"numbers: {bad['not_comparable_because'].iloc[0]}")
    present = [lab for lab in labels if any(lab in row for row in entry.get("side_by_side", []))]
    n_langs = {lab: sum(row.get(lab) is not None for row in entry.get("side_by_side", [])) for lab in present}
    if len(set(n_langs.values())) > 1:
        notes.append(f"{bench}: runs cover different languages ({', '.join(f'{k}: {v}' for k, v in n_langs.items())}); "
                     "means over languages are not comparable across them")
    info_cols = [col("name", "language"), col("language", "code"),
                 *[col(c, definition.report.label(c) if definition else c, filter=True) for c in groupings]]
    sbs_rows = [{**row, **lang_info(row["language"])} for row in entry.get("side_by_side", [])]
    sbs_cols = info_cols + [col(lab, lab + (" (baseline)" if lab == labels[0] else ""), "num") for lab in present]
    blocks = [table(f"{bench}-sbs", "accuracy per language, runs side by side", sbs_cols, sbs_rows, search=True)]
    diffs = entry.get("differences", [])
    if diffs:
        pivot: dict[str, dict[str, Any]] = {}
        others = [lab for lab in present[1:]]
        for d in diffs:
            row = pivot.setdefault(d["language"], {"language": d["language"], **lang_info(d["language"])})
            row[d["run"]] = d.get("diff")
            row[f"{d['run']}#sig"] = bool(d.get("significant"))
            # a system without per-question data (a harness folder without sample logs) has a note, no pairs
            row[f"{d['run']}#tip"] = d["note"] if isinstance(d.get("note"), str) else (
                f"{d['run']} - {d['baseline']} on {d['language']}: {d['diff']:+.1f} "
                f"[{_f(d.get('ci_low'))}, {_f(d.get('ci_high'))}], p={_f(d.get('p_value'), 3)}, n={d['n']}")
        dcols = info_cols + [col(lab, lab, "diff", sig=f"{lab}#sig", tip=f"{lab}#tip") for lab in others]
        blocks.append(table(f"{bench}-diff", f"difference to the baseline {labels[0]} (points; ★ = significant, "
                                              "paired bootstrap p < 0.05)", dcols, list(pivot.values()), search=True))
        series = []
        for lab in others:
            rows = sorted((d for d in diffs if d["run"] == lab), key=lambda d: -(d["diff"] if d["diff"] is not None else -1e9))
            series.append({"name": lab, "bars": [{"label": d["language"], "value": d["diff"], "low": d.get("ci_low"),
                                                  "high": d.get("ci_high"), "sig": bool(d["significant"]),
                                                  "tip": pivot[d["language"]][f"{lab}#tip"]} for d in rows]})
        blocks.append(bars(f"{bench}-diffbars", "difference to the baseline per language (pick the run; dark = significant)",
                           series, signed=True))
    acc_series = []
    base_order = sorted(sbs_rows, key=lambda r: -(r.get(labels[0]) if r.get(labels[0]) is not None else -1))
    for lab in present:
        acc_series.append({"name": lab, "bars": [{"label": r["language"], "value": r.get(lab),
                                                  "tip": f"{r['name']} ({r['language']}): {lab} {_f(r.get(lab))}"
                                                  + (f"; baseline {_f(r.get(labels[0]))}" if lab != labels[0] else "")}
                                                 for r in base_order]})
    blocks.append(bars(f"{bench}-accbars", "accuracy per language (pick the run; sorted by the baseline; dashed: chance)",
                       acc_series, chance=entry.get("chance")))
    if entry.get("tokenizer"):
        tok_rows = [{**row, **lang_info(row["language"])} for row in entry["tokenizer"]]
        blocks.append(table(f"{bench}-tokenizer", "tokenizer measures per language and system (fertility: tokens per "
                            "word; continued: share of words in 2+ pieces; premium: tokens / English's on the parallel "
                            "items; unk: share of unknown pieces)",
                            [*info_cols, col("system", filter=True), col("accuracy", "accuracy", "num"),
                             *[col(c, c.replace("_", " "), "num", digits=3) for c in TOKENIZER_COLUMNS]],
                            tok_rows, search=True))
    blocks += item_blocks(bench, entry.get("item_report"))
    seeds = entry.get("seeds", [])
    if seeds:
        blocks.append(table(f"{bench}-seeds", "systems: mean ± std over seeds (of the mean over languages)",
                            [col("system"), col("runs", kind="int"), col("seeds"), col("mean", "mean ± std", "pm", std="std")],
                            seeds, search=False))
    if entry.get("rankings"):
        rk = entry["rankings"]
        subsets = entry.get("rank_subsets") or [k.removeprefix("rank_") for k in rk[0] if k.startswith("rank_")]
        rcols = [col("system")] + [col(s, s, "num") for s in subsets] + \
            [col(k, k.replace("_", " "), "int") for k in rk[0] if k.startswith(("rank_", "shift_"))]
        blocks.append(table(f"{bench}-ranks", f"rankings on {', '.join(subsets)} (1 = best) and position shifts", rcols, rk,
                            search=False))
        blocks.append(table(f"{bench}-rankchanges", "rank changes between subsets",
                            [col("from"), col("to"), col("rank_changes", "rank changes", "int"),
                             col("mean_abs_position_shift", "mean |position shift|", "num")], entry.get("rank_changes", []),
                            search=False))
    return blocks


def _f(v: Any, digits: int = 1) -> str:
    return "n/a" if v is None or v != v else f"{float(v):.{digits}f}"


def write_run_page(path: Path, eval_cfg: EvalConfig, model: ModelConfig, results: dict[str, Any],
                   provenance: dict[str, Any] | None, notes: list[str] | None = None, *, recipe_name: str,
                   seed: int, items: dict[str, dict[str, Any]] | None = None) -> Path:
    """``report.html`` of the run directory holding ``path`` (:func:`run_page`)."""
    return write_page(path, run_page(eval_cfg, model, results, provenance, notes, Path(path).parent,
                                     recipe_name=recipe_name, seed=seed, items=items))


def write_compare_page(path: Path, runs: list[Any], payload: dict[str, Any]) -> Path:
    return write_page(path, compare_page(runs, payload))
