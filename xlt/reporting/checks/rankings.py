"""Check kind on rankings: do systems' ranks per language move more between two subsets than between two others (:mod:`xlt.reporting.rank_changes`)."""

from __future__ import annotations

import numpy as np

from xlt.metrics import permutation_p_value
from xlt.reporting import rank_changes as rc
from xlt.reporting.checks.base import FAILS, HOLDS, UNTESTABLE, Check, Finding, check_kind
from xlt.reporting.paired import VERDICT_RULE, run_predictions, seed_mean_correct
from xlt.reporting.systems import System, direct_benchmark, language_means
from xlt.reporting.verdicts import ALPHA, UNTESTED_PART, all_significant, untestable_parts


def _subset_question_data(entries: list[tuple[System, str]], lang: str,
                          subsets: tuple[str, ...]) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """One language's questions for the rank bootstrap: (systems x questions) seed-mean correctness on the
    questions every seed of every system answered, and each subset's mask; None when the predictions carry
    no subset labels (written before evaluate recorded them)."""
    per = [seed_mean_correct(s, bench, lang) for s, bench in entries]
    ids = sorted(set.intersection(*(set(p) for p in per)))
    first, bench0 = entries[0][0].runs[0], entries[0][1]
    labels = {str(p["id"]): p.get("subsets") for p in run_predictions(first, bench0, lang)}
    if not ids or any(labels.get(i) is None for i in ids):
        return None
    correct = np.array([[p[i] for i in ids] for p in per], dtype=float)
    return correct, {sub: np.array([sub in labels[i] for i in ids], dtype=float) for sub in subsets}


@check_kind("rank_changes_per_language")
def check_rank_changes_per_language(c: Check) -> Finding:
    base, a, b = c.param("base"), c.param("a"), c.param("b")
    need = int(c.claim.params.get("min_systems", 3))  # two systems: a language's rank changes are 0 or 2
    entries = [(s, direct_benchmark(s, c.bench.kind)) for s in c.systems]
    entries = [(s, name) for s, name in entries if name is not None]
    bench = entries[0][1] if entries else None
    entries = [(s, name) for s, name in entries if name == bench]
    if len(entries) < need:
        return c.untestable(f"needs at least {need} systems evaluated on {c.title} (with two, a language's rank "
                            f"changes can only be 0 or 2); found {len(entries)}")
    subs = (base, a, b)
    means = [{sub: language_means(s, name, f"acc_{sub}") for sub in subs} for s, name in entries]
    shared = sorted(set.intersection(*(set(m[sub]) for m in means for sub in subs)))
    if not shared:
        return c.untestable(f"no {c.title} language on which all {len(entries)} systems have {base}, {a} and {b} "
                            "results (systems are ranked only on languages they all have)")
    rows = []
    for lang in shared:
        acc = {sub: np.array([m[sub][lang] for m in means]) for sub in subs}
        rows.append({"language": lang, **rc.language_stats(acc, base, a, b)})
    avg = {k: float(np.mean([r[k] for r in rows])) for k in rows[0] if k != "language"}
    d_changes = avg[f"rank changes {b}"] - avg[f"rank changes {a}"]
    d_shifts = avg[f"position shifts {b}"] - avg[f"position shifts {a}"]
    rows.append({"language": f"mean over {len(shared)}", **avg})
    data = [_subset_question_data(entries, lang, subs) for lang in shared]
    counts = (f"over {len(shared)} languages and {len(entries)} systems on {bench}: {a} vs {base} "
              f"{avg[f'rank changes {a}']:.2f} rank changes, {avg[f'position shifts {a}']:.2f} position shifts; "
              f"{b} vs {base} {avg[f'rank changes {b}']:.2f} and {avg[f'position shifts {b}']:.2f}")
    if not all(x is not None for x in data):
        return c.finding(UNTESTABLE, counts + "; no test: these predictions carry no subset labels (rerun evaluate "
                         "with this xlt to add them), and the counts alone do not decide (a smaller subset moves "
                         "rankings more by noise alone)", "", rows)
    perm = rc.permutation(data, base, a, b, c.samples, c.seed)  # type: ignore[arg-type]
    if perm is None:
        return c.finding(UNTESTABLE, counts + f"; no test: {a} and {b} share questions, so their labels cannot be "
                         "exchanged", "", rows)
    draws = rc.bootstrap(data, base, a, b, c.samples, c.seed)  # type: ignore[arg-type]
    ci_c = rc.interval(draws["changes_b"] - draws["changes_a"], d_changes)
    ci_s = rc.interval(draws["shifts_b"] - draws["shifts_a"], d_shifts)
    p_c = permutation_p_value(perm["changes_b"] - perm["changes_a"], d_changes, "greater")
    p_s = permutation_p_value(perm["shifts_b"] - perm["shifts_a"], d_shifts, "greater")
    null_c = float(np.mean(perm["changes_b"] - perm["changes_a"]))
    null_s = float(np.mean(perm["shifts_b"] - perm["shifts_a"]))
    rows[-1].update({"change difference": d_changes, "change difference ci_low": ci_c["ci_low"],
                     "change difference ci_high": ci_c["ci_high"], "change difference p_value": p_c,
                     "change difference expected by size": null_c,
                     "shift difference": d_shifts, "shift difference ci_low": ci_s["ci_low"],
                     "shift difference ci_high": ci_s["ci_high"], "shift difference p_value": p_s,
                     "shift difference expected by size": null_s,
                     "shift difference bootstrap mean": float(np.mean(draws["shifts_b"] - draws["shifts_a"]))})
    untested = untestable_parts({"rank changes": p_c, "position shifts": p_s})
    if untested:
        return c.finding(UNTESTABLE, counts + "; " + UNTESTED_PART.format(parts=", ".join(untested)), "", rows)
    ok = all_significant([p_c, p_s]) and d_changes > 0 and d_shifts > 0
    why = (counts + f"; {b} - {a}: rank changes {d_changes:+.2f} (95% [{ci_c['ci_low']:+.2f}, {ci_c['ci_high']:+.2f}]; "
           f"{null_c:+.2f} expected from the subset sizes alone; one-sided permutation p={p_c:.3f}), position shifts "
           f"{d_shifts:+.2f} ([{ci_s['ci_low']:+.2f}, {ci_s['ci_high']:+.2f}]; {null_s:+.2f} expected; p={p_s:.3f})")
    if not ok and d_changes > 0 and d_shifts > 0:
        why += f"; {b} moves more, but not more than its size explains at {ALPHA}"
    test = (f"per language, the {len(entries)} systems ranked on {base}, {a} and {b} (mean accuracy over each "
            f"system's seeds); rank changes (systems whose rank differs from their {base} rank) and position "
            f"shifts (sum of |rank difference|) of {a} and of {b} against {base}, averaged over the {len(shared)} "
            f"languages all systems have; significance: permutation test shuffling the {a}/{b} labels among their "
            "questions in every language (subset sizes kept, so the extra noise of a smaller subset is in the null "
            f"distribution, not counted as an effect), one-sided ({b} moves more); {VERDICT_RULE}: rank changes and "
            "position shifts; intervals: paired bootstrap over questions (the same questions drawn for every "
            "system, per language), 95% percentile intervals of the differences (rank statistics are not smooth: "
            "resampling noise alone adds rank changes, so the bootstrap mean is given beside them)")
    return c.finding(HOLDS if ok else FAILS, why, test, rows)
