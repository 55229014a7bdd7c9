"""The translation quality report (``data/translation_report.{json,md}``), written by the translate
stage and by the importer."""

from __future__ import annotations

import logging
from typing import Any

from xlt.markdown import markdown_table
from xlt.run.files import atomic_write_json, atomic_write_text
from xlt.run.layout import RunDir
from xlt.translation.keep import check_kept, keep_rate, keep_warnings
from xlt.translation.quality import QualityStats

log = logging.getLogger("xlt.translation")


def write_report(run: RunDir, meta: dict[str, Any], per_language: dict[str, dict[str, QualityStats]]) -> dict[str, Any]:
    """Write ``translation_report.json`` and ``.md``; return the JSON object."""
    langs: dict[str, Any] = {}
    for lang, by_split in per_language.items():
        total = QualityStats()
        for st in by_split.values():
            total.merge(st)
        rows = {s: {"in": st.counts["rows_in"], "out": st.counts["rows_out"]} for s, st in by_split.items()}
        langs[lang] = {"rows": rows, "keep_rate": keep_rate(rows), **total.to_json()}
    warnings = [w for lang, info in langs.items() for w in keep_warnings(lang, info["rows"])]
    for w in warnings:
        log.warning("translation: %s", w)
    report = {**meta, "languages": langs, "warnings": warnings}
    atomic_write_json(run.translation_report, report)
    atomic_write_text(run.translation_report_md, report_markdown(report))
    check_kept(report, str(run.translation_report_md))
    return report


REPORT_COLUMNS = (
    ("rows_in", "rows in"),
    ("rows_out", "rows out"),
    ("duplicate_rows", "dropped: duplicate rows"),
    ("dropped_duplicate_options", "dropped: equal options"),
    ("dropped_runaway", "dropped: runaway"),
    ("empty_fallback", "empty -> source"),
    ("unchanged", "unchanged"),
    ("runaway", "runaway segs"),
    ("truncated_inputs", "truncated inputs"),
    ("segments_total", "segments"),
    ("segments_unique", "unique"),
    ("segments_cached", "from cache"),
    ("segments_translated", "translated"),
)


def report_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Translation report",
        "",
        f"- translator: `{report.get('translator', '')}`",
        f"- source language: `{report.get('source_language', '')}`",
        "",
        "Rules: an empty output falls back to the source text (counted); an output equal to its source is",
        "only counted; a row with runaway repetition in any field is dropped (unless",
        "translate.quality.drop_runaway=false); a row whose options become identical is dropped. Inputs longer",
        "than translate.max_input_tokens are truncated and counted.",
        "Segment counts are unique segments per unit (a rerun counts cache hits as 'from cache').",
        "",
        *([f"**Warning:** {w}" for w in report.get("warnings", [])] + [""] if report.get("warnings") else []),
        markdown_table(["language", *(h for _, h in REPORT_COLUMNS)],
                       [[lang, *(info["counts"].get(k, 0) for k, _ in REPORT_COLUMNS)]
                        for lang, info in report["languages"].items()],
                       align="-" + "r" * len(REPORT_COLUMNS)).rstrip("\n"),
    ]
    examples = [(lang, what, ex) for lang, info in report["languages"].items() for what, ex in info["examples"].items()]
    if examples:
        lines += ["", "## Examples (first few per problem)", ""]
        for lang, what, ex in examples:
            lines.append(f"- {lang} / {what}: " + "; ".join(f"`{e}`" for e in ex))
    return "\n".join(lines) + "\n"
