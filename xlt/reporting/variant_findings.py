"""The findings' checks that read more than per-language accuracies: per-language rank changes between a
benchmark's subsets (each question's subsets come from the predictions) and a human-translated against a
machine-translated version of the same languages (two entries of one benchmark kind). Registered in
:data:`xlt.reporting.findings.CHECKS`."""

from __future__ import annotations

import numpy as np

from xlt import languages as langtab
from xlt.reporting import rank_changes as rc
from xlt.reporting.findings import (
    ALPHA,
    FAILS,
    HOLDS,
    PAIRED_TEST,
    Check,
    Finding,
    System,
    direct_benchmark,
    is_machine_translated,
    is_translate_test,
    language_means,
    paired_test,
    run_predictions,
    seed_mean_correct,
)
from xlt.scoring.metrics import holm_adjust


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


def check_rank_changes_per_language(c: Check) -> Finding:
    base, a, b = c.param("base"), c.param("a"), c.param("b")
    entries = [(s, direct_benchmark(s, c.bench.kind)) for s in c.systems]
    entries = [(s, name) for s, name in entries if name is not None]
    bench = entries[0][1] if entries else None
    entries = [(s, name) for s, name in entries if name == bench]
    if len(entries) < 2:
        return c.untestable(f"needs at least two systems evaluated on {c.title}; found {len(entries)}")
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
    test = (f"per language, the {len(entries)} systems ranked on {base}, {a} and {b} (mean accuracy over each "
            f"system's seeds); rank changes (systems whose rank differs from their {base} rank) and position "
            f"shifts (sum of |rank difference|) of {a} and of {b} against {base}, averaged over the {len(shared)} "
            f"languages all systems have; holds when {b} moves more than {a} on both")
    if all(x is not None for x in data):
        draws = rc.bootstrap(data, base, a, b, c.samples, c.seed)  # type: ignore[arg-type]
        ci_c = rc.interval(draws["changes_b"] - draws["changes_a"], d_changes)
        ci_s = rc.interval(draws["shifts_b"] - draws["shifts_a"], d_shifts)
        perm = rc.permutation(data, base, a, b, c.samples, c.seed)  # type: ignore[arg-type]
        p_c = rc.permutation_p(perm["changes_b"] - perm["changes_a"], d_changes) if perm else float("nan")
        p_s = rc.permutation_p(perm["shifts_b"] - perm["shifts_a"], d_shifts) if perm else float("nan")
        unc = (f"; {b} - {a}: rank changes {d_changes:+.2f} (bootstrap 95% [{ci_c['ci_low']:+.2f}, "
               f"{ci_c['ci_high']:+.2f}], permutation p={p_c:.3f}), position shifts {d_shifts:+.2f} "
               f"([{ci_s['ci_low']:+.2f}, {ci_s['ci_high']:+.2f}], p={p_s:.3f})")
        rows[-1].update({"shift difference ci_low": ci_s["ci_low"], "shift difference ci_high": ci_s["ci_high"],
                         "shift difference p_value": p_s, "change difference p_value": p_c,
                         "shift difference bootstrap mean": float(np.mean(draws["shifts_b"] - draws["shifts_a"]))})
        test += ("; uncertainty: paired bootstrap over questions (the same questions drawn for every system, per "
                 "language), 95% percentile intervals of the differences (rank statistics are not smooth: "
                 "resampling noise alone adds rank changes, so the bootstrap mean is given beside them); "
                 f"significance: permutation test shuffling the {a}/{b} labels among their questions in every "
                 "language (subset sizes kept, so a smaller subset's extra noise is not counted as an effect)")
    else:
        unc = "; no bootstrap: these predictions carry no subset labels (rerun evaluate with this xlt to add them)"
    ok = d_changes > 0 and d_shifts > 0
    why = (f"over {len(shared)} languages and {len(entries)} systems on {bench}: {a} vs {base} "
           f"{avg[f'rank changes {a}']:.2f} rank changes, {avg[f'position shifts {a}']:.2f} position shifts; "
           f"{b} vs {base} {avg[f'rank changes {b}']:.2f} and {avg[f'position shifts {b}']:.2f}" + unc)
    return c.finding(HOLDS if ok else FAILS, why, test, rows)


def check_human_above_machine_same_language(c: Check) -> Finding:
    tiers, expect = tuple(c.param("tiers")), dict(c.param("expect"))
    rows, verdicts, have_mt = [], [], False
    for s in c.systems:
        run = s.runs[0]
        names = [n for n in sorted(run.results) if run.results[n].kind == c.bench.kind and not is_translate_test(run, n)]
        ht = [n for n in names if not is_machine_translated(run, n)]
        mt = [n for n in names if is_machine_translated(run, n)]
        have_mt |= bool(mt)
        if not ht or not mt:
            continue
        mh, mm = language_means(s, ht[0]), language_means(s, mt[0])
        human = {x for x in mh if (lang := langtab.lookup(x)) is not None and lang.translation == "human"
                 and lang.gmmlu_source != "original"}
        for tier in tiers:
            langs = sorted(x for x in set(mh) & set(mm) & human if langtab.lookup(x).gmmlu_tier == tier)
            tests = [(x, paired_test(s, mt[0], s, ht[0], [x], c.samples, c.seed)) for x in langs]
            tests = [(x, t) for x, t in tests if t["questions"]]
            if not tests:
                continue
            held = holm_adjust([t["p_value"] for _, t in tests])
            diff = float(np.mean([mh[x] - mm[x] for x, _ in tests]))
            rows.append({"system": s.label, "tier": tier, "HT": ht[0], "MT": mt[0], "languages": len(tests),
                         "HT mean": float(np.mean([mh[x] for x, _ in tests])),
                         "MT mean": float(np.mean([mm[x] for x, _ in tests])), "HT - MT": diff,
                         "HT higher": sum(mh[x] > mm[x] for x, _ in tests),
                         "HT significantly higher (Holm)": sum(p < ALPHA and t["diff"] > 0
                                                               for p, (_, t) in zip(held, tests, strict=True)),
                         "MT significantly higher (Holm)": sum(p < ALPHA and t["diff"] < 0
                                                               for p, (_, t) in zip(held, tests, strict=True))})
            if tier in expect:
                verdicts.append(diff > 0 if expect[tier] == "human" else diff < 0)
    if not any(r["tier"] in expect for r in rows):
        if not have_mt:
            why = (f"needs a machine-translated version of {c.title}'s human-translated languages (a {c.bench.kind} "
                   "benchmark entry with machine_translated: true) beside the human-translated one; these runs have "
                   "none, and comparing different languages (human-translated ones are mostly high-resource, "
                   "machine-translated ones low-resource) would measure resource level, not translation")
        else:
            why = (f"needs, for one system, the human-translated and the machine-translated versions of the same "
                   f"{', '.join(expect)}-tier language(s); found none in common")
        return c.untestable(why)
    why = "; ".join(f"{r['system']} {r['tier']}: HT {r['HT mean']:.1f} vs MT {r['MT mean']:.1f} ({r['HT - MT']:+.1f}; "
                    f"HT higher on {r['HT higher']}/{r['languages']}, significantly after Holm: HT "
                    f"{r['HT significantly higher (Holm)']}, MT {r['MT significantly higher (Holm)']})" for r in rows)
    return c.finding(HOLDS if all(verdicts) else FAILS, why,
                     "per resource tier, the same languages in their human-translated and machine-translated "
                     f"versions (same question ids): mean HT - MT; per language a {PAIRED_TEST}, Holm-corrected "
                     f"within each tier; the verdict reads the tiers {', '.join(f'{k}: {v} higher' for k, v in expect.items())}",
                     rows)
