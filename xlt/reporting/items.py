"""The cross-language item report: per parallel item, in how many languages each system answers it right, and
the (item, language) pairs that break in one language: wrong for every system where the item is right in most
other languages.

Belebele and Global-MMLU are parallel: an item id is the same question in every language. A question the
systems answer right in almost every language and wrong in one points at that language's translation (an
ambiguous or wrongly keyed answer, e.g. facebookresearch/belebele#5), not at the models. Per system (a seed
group; an item's score in a language is the share of its seeds that answered it right) the report counts,
per item, the languages it is answered right in; a pair (item, language) is *suspect* when every system
compared gets it wrong (seed share < 1/2) while answering the item right in at least ``share`` (default
:data:`DEFAULT_SHARE`) of its other languages (at least :data:`MIN_OTHER` of them). Suspects are sorted by
the smallest such share over the systems (the weakest evidence first decides), then the mean.

The texts shown beside a suspect (passage, question and options in its language and in a reference language
where the item is right: English when it is, else the one most systems get right) are read with the
benchmark's definition from the run's config; where they cannot be read, the report says why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from xlt import languages as langtab
from xlt.run.layout import RunDir
from xlt.run.results import read_predictions

DEFAULT_SHARE = 0.8  # an item right in at least this share of the other languages, for every system
MIN_OTHER = 3  # other languages an item needs for the share to say anything
SHOWN = 30  # suspects shown with their texts (all are in the JSON and the CSV)
RTL_SCRIPTS = {"Arab", "Hebr", "Thaa", "Syrc", "Nkoo", "Adlm", "Samr", "Mand"}


def text_direction(language: str) -> str:
    """``rtl`` for a language written right to left (from its script in the language table), else ``ltr``."""
    lang = langtab.lookup(language)
    script = lang.script if lang is not None else language.partition("_")[2]
    return "rtl" if script in RTL_SCRIPTS else "ltr"


def read_system(
    runs: Sequence[Any], benchmark: str
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, list[int]]]]:
    """One system's (its seeds') predictions of ``benchmark``: per language, per item id every run of the
    language answered, the share of the runs that answered it right, and the option each run picked."""
    scores: dict[str, dict[str, float]] = {}
    picks: dict[str, dict[str, list[int]]] = {}
    with_it = [r for r in runs if benchmark in r.results]
    langs = (
        sorted(set.intersection(*(set(r.results[benchmark].per_language["language"]) for r in with_it)))
        if with_it
        else []
    )
    for lang in langs:
        per = [
            {
                str(p["id"]): p
                for p in read_predictions(RunDir(r.path), benchmark, lang)
            }
            for r in with_it
        ]
        ids = set.intersection(*(set(p) for p in per))
        scores[lang] = {i: sum(p[i]["prediction"] == p[i]["gold"] for p in per) / len(per) for i in ids}
        picks[lang] = {i: [int(p[i]["prediction"]) for p in per] for i in ids}
    return scores, picks


def system_scores(runs: Sequence[Any], benchmark: str) -> dict[str, dict[str, float]]:
    """Per language, per item id, the share of the ``runs`` (one system's seeds) that answered it right
    (items every run of the language answered)."""
    return read_system(runs, benchmark)[0]


def item_counts(systems: dict[str, dict[str, dict[str, float]]]) -> pd.DataFrame:
    """Per item, the languages it was evaluated in and, per system, the languages it is answered right in
    (seed shares summed), fewest first."""
    ids = sorted({i for s in systems.values() for scores in s.values() for i in scores})
    rows = []
    for i in ids:
        row: dict[str, Any] = {"item": i}
        for label, s in systems.items():
            vals = [scores[i] for scores in s.values() if i in scores]
            row[f"languages {label}"] = len(vals)
            row[f"right {label}"] = float(np.sum(vals)) if vals else float("nan")
        rows.append(row)
    df = pd.DataFrame(rows)
    if not len(df):
        return df
    right = [c for c in df if c.startswith("right ")]
    return (
        df.assign(_k=df[right].mean(axis=1))
        .sort_values(["_k", "item"])
        .drop(columns="_k")
        .reset_index(drop=True)
    )


def _matrix(scores: dict[str, dict[str, float]], ids: list[str], langs: list[str]) -> np.ndarray:
    """One system's scores as an (items x languages) array, NaN where it did not answer."""
    row = {i: k for k, i in enumerate(ids)}
    out = np.full((len(ids), len(langs)), np.nan)
    for j, lang in enumerate(langs):
        for i, v in scores[lang].items():
            out[row[i], j] = v
    return out


def suspects(
    systems: dict[str, dict[str, dict[str, float]]], share: float = DEFAULT_SHARE, min_other: int = MIN_OTHER
) -> list[dict[str, Any]]:
    """The (item, language) pairs every system gets wrong while answering the item right in at least
    ``share`` of its other languages (at least ``min_other`` of them), strongest first."""
    if not systems:
        return []
    langs = sorted(set.intersection(*(set(s) for s in systems.values())))
    ids = sorted({i for s in systems.values() for lang in langs for i in s[lang]})
    if not langs or not ids:
        return []
    shares, others, ok = {}, {}, np.ones((len(ids), len(langs)), dtype=bool)
    for label, s in systems.items():
        m = _matrix(s, ids, langs)
        seen = ~np.isnan(m)
        filled = np.nan_to_num(m)
        count = seen.sum(axis=1, keepdims=True) - seen  # the item's other languages this system answered
        with np.errstate(invalid="ignore", divide="ignore"):
            elsewhere = (filled.sum(axis=1, keepdims=True) - filled) / count
        ok &= seen & (filled < 0.5) & (count >= min_other) & (elsewhere >= share - 1e-12)
        shares[label], others[label] = elsewhere, count
    out = []
    for r, c in zip(*np.nonzero(ok), strict=True):
        per = {label: float(v[r, c]) for label, v in shares.items()}
        out.append(
            {
                "item": ids[r],
                "language": langs[c],
                "weakest share right elsewhere": min(per.values()),
                "mean share right elsewhere": float(np.mean(list(per.values()))),
                "other languages": int(min(v[r, c] for v in others.values())),
                **{f"right elsewhere {k}": v for k, v in per.items()},
            }
        )
    out.sort(
        key=lambda r: (
            -r["weakest share right elsewhere"],
            -r["mean share right elsewhere"],
            r["item"],
            r["language"],
        )
    )
    return out


def reference_language(
    systems: dict[str, dict[str, dict[str, float]]], item: str, language: str, pivot: str | None
) -> str | None:
    """The language shown beside a suspect: the pivot (English) when every system answers the item right
    there, else the language with the highest mean share right."""
    best, best_v = None, -1.0
    for lang in sorted(set.intersection(*(set(s) for s in systems.values()))):
        if lang == language or not all(item in s[lang] for s in systems.values()):
            continue
        v = float(np.mean([s[lang][item] for s in systems.values()]))
        if lang == pivot and v >= 1.0:
            return lang
        if v > best_v:
            best, best_v = lang, v
    return best


Loader = Callable[[str], dict[str, dict[str, Any]]]


def item_report(
    systems: dict[str, dict[str, dict[str, float]]],
    pivot: str | None,
    load: Loader | None,
    share: float = DEFAULT_SHARE,
    shown: int = SHOWN,
    picks: dict[str, dict[str, dict[str, list[int]]]] | None = None,
) -> dict[str, Any]:
    """The report of one benchmark: ``items`` (per item the counts), ``suspects`` (each with, for the first
    ``shown``, its texts in its language and a reference language: ``load(language)`` gives the items by id,
    or raises; ``None``: no texts; and, from ``picks`` (per system, :func:`read_system`'s second part), the
    option each system's runs picked there) and the settings."""
    found = suspects(systems, share)
    texts: dict[str, dict[str, dict[str, Any]]] = {}
    why = "" if load is not None else "the benchmark's items are not at hand"
    for s in found[:shown]:
        ref = reference_language(systems, s["item"], s["language"], pivot)
        s["reference language"] = ref
        for lang in (s["language"], ref):
            if lang is None or lang in texts or why:
                continue
            try:
                texts[lang] = load(lang)  # type: ignore[misc]
            except Exception as err:  # noqa: BLE001 - any failure to read the texts leaves them out, saying why
                why = f"the items' texts could not be read ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"
        if picks:
            s["picks"] = {label: p.get(s["language"], {}).get(s["item"], []) for label, p in picks.items()}
        if not why:
            s["texts"] = [_text(texts, lang, s["item"]) for lang in (s["language"], ref) if lang is not None]
            s["texts"][0]["picked"] = [
                f"{label}: option {', '.join(str(k + 1) for k in ks)}"
                for label, ks in (s.get("picks") or {}).items()
            ]
    return {
        "share": share,
        "min_other_languages": MIN_OTHER,
        "systems": list(systems),
        "items": item_counts(systems).to_dict(orient="records"),
        "suspects": found,
        "texts_missing": why,
    }


def _text(texts: dict[str, dict[str, dict[str, Any]]], lang: str, item: str) -> dict[str, Any]:
    it = texts.get(lang, {}).get(item) or {}
    return {
        "language": lang,
        "dir": text_direction(lang),
        "passage": it.get("passage", ""),
        "question": it.get("question", ""),
        "options": list(it.get("options") or []),
        "gold": it.get("label"),
    }


def items_by_id(ds: Any) -> dict[str, dict[str, Any]]:
    """A loaded benchmark split (records) by item id."""
    return {
        str(r["id"]): {
            "passage": r.get("passage", ""),
            "question": r.get("question", ""),
            "options": list(r.get("options") or []),
            "label": r.get("label"),
        }
        for r in ds
    }


def suspects_markdown(report: dict[str, Any], heading: str) -> str:
    """The Markdown section of one benchmark's item report."""
    from xlt.reporting.render import frame_markdown  # lazy: start-up time

    found = report["suspects"]
    who = (
        "this run answers"
        if report["systems"] == ["this run"]
        else f"every system ({', '.join(report['systems'])}) answers"
    )
    head = (
        f"\n### items that break in one language\n\nPairs (item, language) that {who} wrong while answering "
        f"the item right in at least "
        f"{report['share']:.0%} of its other languages (at least {report['min_other_languages']}): a translation "
        f"or answer-key problem more likely than the models'. {len(found)} found"
        + (" (texts in the HTML page)" if found and not report["texts_missing"] else "")
        + (f"; {report['texts_missing']}" if found and report["texts_missing"] else "")
        + (
            "; one run alone cannot tell them from its own scattered misses: compare several systems "
            "(report --compare)"
            if len(report["systems"]) == 1 and found
            else ""
        )
        + ".\n\n"
    )
    if not found:
        return head
    cols = [
        "item",
        "language",
        "reference language",
        "weakest share right elsewhere",
        "mean share right elsewhere",
        "other languages",
    ]
    df = pd.DataFrame([{c: r.get(c) for c in cols} for r in found])
    return head + frame_markdown(df, digits=2)
