"""``report --compare``: several run directories side by side, written as ``compare.{md,json,html}``.

The tables of finished runs (reading runs, side-by-side tables, paired differences, seed groups, rankings) are
in :mod:`xlt.reporting.run_tables`; the papers' findings in :mod:`xlt.reporting.findings`; the page in
:mod:`xlt.reporting.html`. This module puts them together.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from xlt.config import validate
from xlt.data.benchmarks import get_benchmark
from xlt.errors import DataError
from xlt.reporting.findings import add_findings
from xlt.reporting.harness.imported import harness_markdown, harness_provenance, harness_system
from xlt.reporting.harness.read import is_harness_folder
from xlt.reporting.html import write_compare_page
from xlt.reporting.items import DEFAULT_SHARE, item_report, items_by_id, read_system, suspects_markdown
from xlt.reporting.plots import comparison_plot
from xlt.reporting.render import frame_markdown
from xlt.reporting.run_tables import (
    RunInfo,
    group_label,
    paired_differences,
    rankings,
    seed_groups,
    seed_summary,
    side_by_side,
    system_subset_scores,
    tokenizer_side_by_side,
)
from xlt.reporting.tables import chance_level, heading
from xlt.run.files import atomic_write_json, atomic_write_text, strict_json

TOKENIZER_NOTE = ("Each system's tokenizer on the items, no special tokens: `fertility` subword tokens per word, "
                  "`continued_words` share of words in two or more pieces (both undefined for scripts written without "
                  "spaces), `premium` tokens on the parallel items / English's, `unk_rate` share of unknown pieces.")


def compare_items(runs: list[RunInfo], groups: list[list[RunInfo]], bench: str, definition: Any,
                  share: float = DEFAULT_SHARE) -> dict[str, Any]:
    """The cross-language item report of ``bench`` over the systems (seed groups) that evaluated it
    (:mod:`xlt.reporting.items`); its texts read as the first such run's config entry reads them."""
    # systems without per-question data (a harness folder without sample logs) are left out, as the page says
    read = {group_label(g): read_system(g, bench) for g in groups
            if any(bench in r.results for r in g) and all(r.per_question for r in g)}
    systems = {label: scores for label, (scores, _) in read.items()}
    first = next(r for r in runs if bench in r.results)

    def load(lang: str) -> dict[str, dict[str, Any]]:
        bcfg = validate(first.config).eval.benchmarks[bench]
        return items_by_id(definition.load_checked(bcfg, lang, split=bcfg.split)[0])

    return item_report(systems, definition.pivot_language, load, share,
                       picks={label: picks for label, (_, picks) in read.items()})


def compare_runs(run_dirs: list[str | Path], out: str | Path, samples: int = 1000, seed: int = 0,
                 include_paths: Sequence[str | Path] = (), item_share: float = DEFAULT_SHARE) -> dict[str, Any]:
    """Compare ``run_dirs`` (the first is the baseline; an lm-evaluation-harness output folder is a system too:
    :mod:`xlt.reporting.harness.imported`) and write the comparison files under ``out``.
    ``include_paths``: the compared runs' ``eval.include_path`` folders whose definition files may be run
    (none by default: a comparison runs no code of the runs it compares). ``item_share``: the item report's
    share of other languages an item must be right in (:mod:`xlt.reporting.items`)."""
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
    # lm-evaluation-harness output folders are systems too, read beside the xlt runs (xlt/reporting/harness)
    harness = {str(p) for p in run_dirs if is_harness_folder(p)}
    xlt_runs = {str(p): RunInfo(Path(p), include_paths) for p in run_dirs if str(p) not in harness}
    runs = [xlt_runs[str(p)] if str(p) in xlt_runs else
            harness_system(p, out, list(xlt_runs.values()), samples, seed, include_paths) for p in run_dirs]
    benchmarks = sorted({b for r in runs for b in r.results})
    groups = seed_groups(runs)
    md = ["# Comparison of runs\n", "\nRuns (baseline first): " + ", ".join(f"`{r.label}`" for r in runs) + "\n"]
    payload: dict[str, Any] = {"runs": [r.label for r in runs], "benchmarks": {}}
    provenance = harness_provenance(runs)
    if provenance:
        payload["harness_systems"] = provenance
        md.append(harness_markdown(provenance))
    for bench in benchmarks:
        sbs = side_by_side(runs, bench)
        diffs = paired_differences(runs, bench, samples, seed)
        seeds = seed_summary(groups, bench)
        atomic_write_text(out / f"{bench}_side_by_side.csv", sbs.to_csv())
        atomic_write_text(out / f"{bench}_differences.csv", diffs.to_csv(index=False))
        atomic_write_text(out / f"{bench}_seeds.csv", seeds.to_csv(index=False))
        definition = get_benchmark(next(r.results[bench].kind for r in runs if bench in r.results))
        chance = chance_level(pd.concat([r.results[bench].per_language for r in runs if bench in r.results]))
        comparison_plot(sbs, bench, out, chance, heading(definition, bench))
        entry: dict[str, Any] = {"side_by_side": sbs.reset_index().to_dict(orient="records"),
                                 "differences": diffs.to_dict(orient="records"),
                                 "seeds": seeds.to_dict(orient="records"), "kind": definition.kind, "chance": chance,
                                 "heading": heading(definition, bench)}
        md += [f"\n## {heading(definition, bench)}\n", "\n### accuracy per language\n\n", frame_markdown(sbs.reset_index()),
               "\n### differences vs baseline (paired bootstrap)\n\n", frame_markdown(diffs, digits=3) if len(diffs) else "none\n",
               "\n### mean ± std over seeds\n\n", frame_markdown(seeds, digits=2)]
        tok = tokenizer_side_by_side(groups, bench)
        if len(tok):
            atomic_write_text(out / f"{bench}_tokenizer.csv", tok.to_csv(index=False))
            entry["tokenizer"] = tok.to_dict(orient="records")
            md += ["\n### tokenizer measures per language and system\n\n", TOKENIZER_NOTE, "\n\n",
                   frame_markdown(tok, digits=3)]
        items = compare_items(runs, groups, bench, definition, item_share)
        if items["items"]:
            atomic_write_text(out / f"{bench}_items.csv", pd.DataFrame(items["items"]).to_csv(index=False))
            atomic_write_text(out / f"{bench}_item_suspects.csv", pd.DataFrame(
                [{k: v for k, v in r.items() if k != "texts"} for r in items["suspects"]]).to_csv(index=False))
            entry["item_report"] = {k: v for k, v in items.items() if k != "items"}
            md.append(suspects_markdown(items, heading(definition, bench)))
        if definition.report.rank_subsets:
            subsets = definition.report.rank_subsets
            scores = system_subset_scores(groups, bench, subsets)
            ranks, changes = rankings(scores, subsets, definition.report.rank_pairs)
            atomic_write_text(out / f"{bench}_rankings.csv", scores.merge(ranks, on="system").to_csv(index=False))
            entry["rankings"] = scores.merge(ranks, on="system").astype(object).to_dict(orient="records")
            entry["rank_changes"] = changes.to_dict(orient="records")
            entry["rank_subsets"] = list(subsets)
            md += [f"\n### rankings on {', '.join(subsets)}\n\n", frame_markdown(scores.merge(ranks, on="system")),
                   "\n### rank changes between subsets\n\n", frame_markdown(changes, digits=2)]
        payload["benchmarks"][bench] = entry
    # the definitions' findings (xlt/reporting/findings.py), on the systems with per-question data
    without = [r.label for r in runs if not r.per_question]
    if without:
        payload["without_per_question_data"] = without
        md.append(f"\n## Systems without per-question data\n\n{', '.join(f'`{w}`' for w in without)}: an "
                  "lm-evaluation-harness folder without sample logs (`--log_samples`). Its accuracy per language, "
                  "the summaries and the rankings are reported; the paired differences, the item report and the "
                  "findings need per-question data and leave it out.\n")
    md.append(add_findings([r for r in runs if r.per_question], payload, samples, seed))
    atomic_write_text(out / "compare.md", "".join(md))
    atomic_write_json(out / "compare.json", payload)
    write_compare_page(out / "compare.html", runs, strict_json(payload))
    return payload

