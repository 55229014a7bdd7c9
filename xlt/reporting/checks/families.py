"""Check kinds on model families: which of XLM-R, XLM-V and InfoXLM is best on resource levels, or has the most languages above a threshold."""

from __future__ import annotations

from typing import Any

import numpy as np

from xlt.errors import ConfigError
from xlt.reporting.checks.base import FAILS, HOLDS, UNTESTABLE, Check, Finding, check_kind
from xlt.reporting.paired import PAIRED_TEST, VERDICT_RULE, fmt_test, paired_scores, paired_test, seed_stat
from xlt.reporting.systems import System, direct_benchmark, language_attr, language_means
from xlt.reporting.verdicts import (
    ALPHA,
    UNTESTED_PART,
    all_significant,
    count_above_test,
    largest_p,
    untestable_parts,
)

# Resource levels from high to low (the language table's default tiers, or the labels of a user grouping file).
RESOURCE_ORDER = ("high", "medium", "mid", "low", "lowest")


def _article(word: str) -> str:
    return "an" if word[:1].upper() in "AEIOFHLMNRSX" else "a"


def _families_text(families: tuple[str, ...]) -> str:
    names = [f"{_article(f)} {f}" for f in families]
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]


def family_group(systems: list[System], families: tuple[str, ...]) -> tuple[dict[str, System] | None, str]:
    """One system of each of ``families`` in the same setting and size (the first such group), or why none."""
    found: dict[tuple[str, str | None], dict[str, System]] = {}
    for s in systems:
        if s.family in families and s.setting != "llm":
            found.setdefault((s.setting, s.size), {}).setdefault(s.family, s)
    for (setting, size), fam in found.items():
        if len(fam) == len(families):
            return fam, f"{setting}, {size or 'unknown size'}"
    have = "; ".join(f"{setting} {size or '?'}: {', '.join(sorted(f))}" for (setting, size), f in found.items())
    return None, (f"needs {_families_text(families)} system in the same setting (zero-shot or "
                  f"translate-train-all) and size; these runs have {have or 'none of these models'}")


def _family_benches(c: Check, families: tuple[str, ...]) -> tuple[dict[str, System] | None, dict[str, str], str]:
    fam, where = family_group(c.systems, families)
    if fam is None:
        return None, {}, where
    benches = {f: direct_benchmark(s, c.bench.kind) for f, s in fam.items()}
    if any(b is None for b in benches.values()):
        return None, {}, f"needs {c.title} results (in-language) for all {len(families)} systems"
    return fam, benches, where  # type: ignore[return-value]


@check_kind("family_best_on_levels")
def check_family_best_on_levels(c: Check) -> Finding:
    families = tuple(c.param("families"))
    target, which, lowest = c.param("family"), c.param("levels"), str(c.param("lowest")).lower()
    column = c.param("column", "resource")
    order = tuple(c.param("order", RESOURCE_ORDER))
    if which not in ("lowest", "above_lowest"):
        raise ConfigError(f"{c.bench.kind}: finding {c.claim.id!r}: levels must be 'lowest' or 'above_lowest', got {which!r}")
    if lowest not in order:
        raise ConfigError(f"{c.bench.kind}: finding {c.claim.id!r}: lowest level {lowest!r} is not one of {list(order)}")
    fam, benches, where = _family_benches(c, families)
    if fam is None:
        return c.untestable(where)
    means = {f: language_means(s, benches[f]) for f, s in fam.items()}
    shared = sorted(set.intersection(*(set(m) for m in means.values())))
    if not shared:
        return c.untestable(f"no {c.title} language has a result from all {len(families)} systems ({where})")
    level_of = {k: v.lower() for k, v in language_attr(fam[target], benches[target], column).items()}
    levels = {lv for lv in (level_of.get(lang) for lang in shared) if lv in order}
    unknown = sorted({level_of.get(lang, "n/a") for lang in shared} - set(order) - {"n/a"})
    if len(levels) < 2:
        return c.untestable(f"needs languages of at least two known {c.bench.report.label(column)}s ({', '.join(order)}); the "
                            f"compared languages have {sorted(levels) or 'none'}"
                            + (f" and unordered labels {unknown}" if unknown else ""))
    label = c.bench.report.label(column)
    if lowest not in levels:
        # The lowest level of the taxonomy, not the lowest one present: a run of high- and mid-resource
        # languages says nothing about the lowest-resource ones.
        return c.untestable(f"needs languages of the lowest {label} ({lowest!r}) among those all systems evaluated; the "
                            f"compared languages have {sorted(levels)}")
    ordered = [lv for lv in order if lv in levels]
    picked = [lv for lv in ordered if order.index(lv) < order.index(lowest)] if which == "above_lowest" else [lowest]
    if not picked:
        return c.untestable(f"needs languages of a {label} above {lowest!r}; the compared languages have {sorted(levels)}")
    others = [f for f in families if f != target]
    rows, winners, closest, p_parts, parts = [], {}, {}, [], {}
    for lv in ordered:
        langs = [lang for lang in shared if level_of.get(lang) == lv]
        acc = {f: float(np.mean([means[f][lang] for lang in langs])) for f in families}
        rank = sorted(families, key=lambda f: -acc[f])
        winners[lv] = rank[0] if acc[rank[0]] > acc[rank[1]] else None  # a tie has no winner
        # the target against each other family, one-sided (target higher); the part that decides is the
        # largest p-value (intersection-union), shown with the nearest competitor's difference and interval
        vs = {f: paired_test(fam[f], benches[f], fam[target], benches[target], langs, c.samples, c.seed, "greater")
              for f in others}
        p_max = largest_p([t["p_value"] for t in vs.values()])  # NaN when a part cannot be tested
        untested = [f for f in others if untestable_parts({f: vs[f]["p_value"]})]
        nearest = untested[0] if untested else max(others, key=lambda f: (vs[f]["p_value"], acc[f]))
        closest[lv] = (nearest, vs[nearest])
        if lv in picked:
            p_parts.append(p_max)
            parts.update({f"{lv}: {target} vs {f}": vs[f]["p_value"] for f in others})
        rows.append({column: lv, "languages": len(langs), **{f"{f} ({fam[f].label})": acc[f] for f in families},
                     "best": winners[lv] or "tie", f"{target} minus {nearest}": vs[nearest]["diff"],
                     "ci_low": vs[nearest]["ci_low"], "ci_high": vs[nearest]["ci_high"],
                     f"p ({target} above each other, one-sided, largest)": p_max, "significant": p_max < ALPHA})
    test = (f"mean {c.title} accuracy over the languages of each {c.bench.report.label(column)} ({where}; levels from the "
            f"report's {column} column); on the pooled questions of the level, {target} against each other family: "
            f"{PAIRED_TEST}, one-sided ({target} higher); {VERDICT_RULE}: {target} above every other family on "
            f"{'every level above ' + lowest if which == 'above_lowest' else 'the ' + lowest + ' level'}")
    why = "; ".join(f"{lv}: best {winners[lv] or 'tie'}; {target} vs {closest[lv][0]}: {fmt_test(closest[lv][1])}"
                    for lv in picked)
    untested = untestable_parts(parts)
    if untested:
        return c.finding(UNTESTABLE, UNTESTED_PART.format(parts=", ".join(f"{p} (no question both answered)"
                                                                          for p in untested)) + f"; {why}", test, rows)
    ok = all(winners[lv] == target for lv in picked) and all_significant(p_parts)
    if not ok and all(winners[lv] == target for lv in picked):
        why += f"; {target} has the highest mean, but not significantly above every other family at {ALPHA}"
    return c.finding(HOLDS if ok else FAILS, why, test, rows)


def _family_most(c: Check, strict: bool) -> Finding:
    """Of ``families``, does ``family`` have the most languages above (``strict``) or at or above
    ``threshold``, counted over the languages every compared system has (a family evaluated on more
    languages must not win by it)?"""
    families = tuple(c.param("families"))
    family, t = c.param("family"), float(c.param("threshold"))
    fam, benches, where = _family_benches(c, families)
    if fam is None:
        return c.untestable(where)
    shared = sorted(set.intersection(*(set(language_means(s, benches[f])) for f, s in fam.items())))
    if not shared:
        return c.untestable(f"no {c.title} language has a result from all {len(families)} systems ({where})")
    op = ">" if strict else ">="

    def count(r: Any, b: str) -> int | None:
        if b not in r.results:
            return None
        df = r.results[b].per_language.set_index("language")["accuracy"]
        acc = df.reindex(shared).dropna()
        return int((acc > t).sum() if strict else (acc >= t).sum())

    key = f"languages {op} {t:g} (seed-mean accuracy)"
    per_seed = {f: seed_stat(s, lambda r, b=benches[f]: count(r, b)) for f, s in fam.items()}
    tests = {}
    for f in families:
        if f == family:
            continue
        pairs = [paired_scores(fam[f], benches[f], fam[family], benches[family], lang) for lang in shared]
        answered = [(x, y) for x, y in pairs if len(x)]
        tests[f] = count_above_test([y for _, y in answered], [x for x, _ in answered], t, strict, c.samples, c.seed)
        if len(answered) < len(pairs):  # a language without a question both answered: this part is not testable
            tests[f]["p_value"] = float("nan")
    counts = {f: tests[f]["count_other"] for f in tests}
    counts[family] = next(iter(tests.values()))["count_target"]
    rows = [{"model": f, "system": fam[f].label, key: counts[f], "mean over seeds of per-run counts": per_seed[f][0],
             "std over seeds": per_seed[f][1], "seeds": len(fam[f].runs), "languages compared": len(shared),
             f"{family} minus this": (counts[family] - counts[f]) if f != family else None,
             "p (one-sided)": tests[f]["p_value"] if f in tests else None} for f in families]
    best = max(counts.values())
    leaders = [f for f in families if counts[f] == best]
    p_max = largest_p([x["p_value"] for x in tests.values()])
    ok = leaders == [family] and all_significant([x["p_value"] for x in tests.values()])
    untested = untestable_parts({f: x["p_value"] for f, x in tests.items()})
    nearest = untested[0] if untested else max(tests, key=lambda f: (tests[f]["p_value"], counts[f]))
    why = (f"{' and '.join(leaders)} {'has' if len(leaders) == 1 else 'share'} the most ({best} of the "
           f"{len(shared)} languages all {len(families)} systems have); {family} minus {nearest}: "
           f"{counts[family] - counts[nearest]:+d} languages, one-sided p={p_max:.3f} (largest over the other "
           f"families; {'significant' if p_max < ALPHA else 'not significant'} at {ALPHA})")
    if untested:
        why = UNTESTED_PART.format(parts=", ".join(f"{family} vs {f} (a language without a question both "
                                                   "answered)" for f in untested)) + f"; {why}"
    return c.finding(UNTESTABLE if untested else HOLDS if ok else FAILS, why,
                     f"languages whose seed-mean accuracy is {op} {t:g}, over the {len(shared)} languages all "
                     f"{len(families)} systems have ({where}; per-run counts, mean ± std over seeds, beside them); "
                     f"{family} against each other family: the difference of the counts, p-value from a paired "
                     "permutation test (in every language, each question's two scores swapped at random); "
                     f"{VERDICT_RULE}", rows)


@check_kind("family_most_above")
def check_family_most_above(c: Check) -> Finding:
    return _family_most(c, strict=True)


@check_kind("family_most_at_or_above")
def check_family_most_at_or_above(c: Check) -> Finding:
    return _family_most(c, strict=False)
