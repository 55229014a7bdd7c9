"""Check kinds on transfer settings: translate-train-all against zero-shot, translate-test against in-language, human- against machine-translated test sets."""

from __future__ import annotations

import json

import numpy as np

from xlt import languages as langtab
from xlt.metrics import holm_adjust
from xlt.reporting.checks.base import FAILS, HOLDS, UNTESTABLE, Check, Finding, check_kind
from xlt.reporting.paired import PAIRED_TEST, VERDICT_RULE, paired_scores, paired_test
from xlt.reporting.systems import (
    System,
    direct_benchmark,
    is_machine_translated,
    is_translate_test,
    language_means,
)
from xlt.reporting.verdicts import ALPHA, UNTESTED_PART, wins_test


@check_kind("translate_train_all_beats_zero_shot")
def check_translate_train_all_beats_zero_shot(c: Check) -> Finding:
    pairs = [(z, t) for z in c.systems if z.setting == "zero-shot"
             for t in c.systems if t.setting == "translate-train-all" and t.model_key == z.model_key]
    if not pairs:
        have = ", ".join(s.describe() for s in c.systems if s.setting != "llm") or "no encoder runs"
        return c.untestable("needs a zero-shot and a translate-train-all system with the same model config; "
                            f"these runs have {have}")
    rows, fails, untested = [], [], []
    for z, t in pairs:
        bz, bt = direct_benchmark(z, c.bench.kind), direct_benchmark(t, c.bench.kind)
        if bz is None or bt is None:
            untested.append(f"{z.label} / {t.label}: no {c.title} results")
            continue
        mz, mt = language_means(z, bz), language_means(t, bt)
        shared = sorted(set(mz) & set(mt))
        test = paired_test(z, bz, t, bt, shared, c.samples, c.seed, "greater")
        if not test["questions"]:
            untested.append(f"{z.label} / {t.label}: no {c.title} question both answered"
                            + ("" if shared else " (no language both evaluated)"))
            continue
        wins = sum(mt[lang] > mz[lang] for lang in shared)
        rows.append({"model": z.family or z.model_key_name(), "zero-shot": z.label, "translate-train-all": t.label,
                     "languages": len(shared), "zero-shot mean": float(np.mean([mz[x] for x in shared])),
                     "translate-train-all mean": float(np.mean([mt[x] for x in shared])),
                     "diff": test["diff"], "ci_low": test["ci_low"], "ci_high": test["ci_high"],
                     "p_value (one-sided)": test["p_value"], "significant": test["significant"],
                     "questions": test["questions"], "seeds": test["seeds"],
                     "languages where translate-train-all is higher": wins})
        if not (test["diff"] > 0 and test["significant"]):
            fails.append(z.family or z.model_key_name())
    if not rows:
        return c.untestable("; ".join(untested))
    why = "; ".join(f"{r['model']}: {r['translate-train-all mean']:.1f} vs {r['zero-shot mean']:.1f} "
                    f"(diff {r['diff']:+.1f} [{r['ci_low']:+.1f}, {r['ci_high']:+.1f}], one-sided "
                    f"p={r['p_value (one-sided)']:.3f}, {'significant' if r['significant'] else 'not significant'} at "
                    f"{ALPHA}; higher on {r['languages where translate-train-all is higher']}/{r['languages']} languages)"
                    for r in rows)
    if untested:  # every pair is a part of the claim: one that cannot be tested leaves it undecided
        why = UNTESTED_PART.format(parts="; ".join(untested)) + f"; {why}"
    return c.finding(UNTESTABLE if untested else FAILS if fails else HOLDS, why,
                     f"mean accuracy over the languages both evaluated; {PAIRED_TEST}, one-sided (translate-train-all "
                     f"higher); {VERDICT_RULE}: every pair", rows)


@check_kind("translate_test_beats_in_language_llm")
def check_translate_test_beats_in_language_llm(c: Check) -> Finding:
    direct: dict[str, tuple[System, str]] = {}
    tt: dict[str, tuple[System, str]] = {}
    encoder_tt = []
    # "llm" (default): an LLM's in-language and translate-test runs; "any": encoders too, each system's
    # own in-language and translate-test entries.
    scope = c.param("systems", "llm")
    for s in c.systems:
        for name in sorted(s.runs[0].results):
            if s.runs[0].results[name].kind != c.bench.kind:
                continue
            is_tt = is_translate_test(s.runs[0], name)
            if s.llm_key is None and scope == "llm":
                if is_tt:
                    encoder_tt.append(s.label)
                continue
            (tt if is_tt else direct).setdefault(s.llm_key or s.label, (s, name))
    keys = [k for k in direct if k in tt]
    what = "LLM" if scope == "llm" else "system"
    if not keys:
        who = "an LLM (eval.scorer=llm)" if scope == "llm" else "a system"
        why = (f"needs {who} evaluated on {c.title} both in-language and translate-test "
               "(a benchmark entry with translate_test: true)")
        if direct or tt:
            found = sorted({s.label for s, _ in (direct if direct else tt).values()})
            why += (f"; found the {what}{'s' if len(found) > 1 else ''} {', '.join(found)} only "
                    f"{'in-language' if direct else 'translate-test'}")
        if encoder_tt:
            why += f"; translate-test runs here are encoders only ({', '.join(encoder_tt)})"
        return c.untestable(why)
    rows, verdicts, skipped = [], [], []
    for k in keys:
        (sd, bd), (st, bt) = direct[k], tt[k]
        md, mt = language_means(sd, bd), language_means(st, bt)
        shared = sorted(set(md) & set(mt))
        per_lang = [paired_test(sd, bd, st, bt, [lang], c.samples, c.seed) for lang in shared]
        tested = [(lang, t) for lang, t in zip(shared, per_lang, strict=True) if t["questions"]]
        if not tested:
            skipped.append(f"{sd.label}: no {c.title} language with questions answered both in-language and "
                           "translate-test")
            continue
        held = holm_adjust([t["p_value"] for _, t in tested])
        diffs = [np.subtract(*paired_scores(sd, bd, st, bt, x)[::-1]) for x, _ in tested]
        w = wins_test(diffs, c.samples, c.seed)
        wins = w["wins"]
        up = [t["diff"] > 0 for _, t in tested]
        rows.append({what: json.loads(k).get("model") if k.startswith("{") else k, "in-language": f"{sd.label}:{bd}",
                     "translate-test": f"{st.label}:{bt}", "languages": len(tested), "translate-test higher": wins,
                     "significantly higher (raw)": sum(t["significant"] and u for (_, t), u in zip(tested, up, strict=True)),
                     "significantly lower (raw)": sum(t["significant"] and not u for (_, t), u in zip(tested, up, strict=True)),
                     "significantly higher (Holm)": sum(p < ALPHA and u for p, u in zip(held, up, strict=True)),
                     "significantly lower (Holm)": sum(p < ALPHA and not u for p, u in zip(held, up, strict=True)),
                     "in-language mean": float(np.mean([md[x] for x, _ in tested])),
                     "translate-test mean": float(np.mean([mt[x] for x, _ in tested])),
                     "p (wins, one-sided)": w["p_value"]})
        verdicts.append(wins > len(tested) / 2 and w["p_value"] < ALPHA)
    if not rows:
        return c.untestable("; ".join(skipped))
    why = "; ".join(f"{r[what]}: translate-test higher on {r['translate-test higher']}/{r['languages']} languages "
                    f"(one-sided p={r['p (wins, one-sided)']:.3f} for that many; significantly higher on {r['significantly higher (Holm)']} after Holm's correction, "
                    f"{r['significantly higher (raw)']} uncorrected; significantly lower on "
                    f"{r['significantly lower (Holm)']} / {r['significantly lower (raw)']})" for r in rows)
    if skipped:  # every LLM (system) is a part of the claim: one that cannot be tested leaves it undecided
        why = UNTESTED_PART.format(parts="; ".join(skipped)) + f"; {why}"
    return c.finding(UNTESTABLE if skipped else HOLDS if all(verdicts) else FAILS, why,
                     f"per language, translate-test vs in-language accuracy of the same {what}; 'most' = more than "
                     "half of the languages; the number of languages where translate-test is higher, its p-value "
                     "from a permutation test (each question's two scores swapped at random, in every language); "
                     f"{VERDICT_RULE}: more than half the languages and that many significant; beside it, per "
                     f"language a {PAIRED_TEST}, the p-values corrected with Holm's step-down method (family-wise "
                     f"error {ALPHA}), counts given corrected and uncorrected", rows)


@check_kind("human_above_machine_same_language")
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
        human = {x for x in mh if (lang := langtab.lookup(x)) is not None and lang.human_translated}
        for tier in tiers:
            langs = sorted(x for x in set(mh) & set(mm) & human if langtab.lookup(x).gmmlu_tier == tier)
            tests = [(x, paired_test(s, mt[0], s, ht[0], [x], c.samples, c.seed)) for x in langs]
            tests = [(x, t) for x, t in tests if t["questions"]]
            if not tests:
                continue
            held = holm_adjust([t["p_value"] for _, t in tests])
            diff = float(np.mean([mh[x] - mm[x] for x, _ in tests]))
            side = {"human": "greater", "machine": "less"}.get(expect.get(tier, ""), "two-sided")
            pooled = paired_test(s, mt[0], s, ht[0], [x for x, _ in tests], c.samples, c.seed, side)
            rows.append({"system": s.label, "tier": tier, "HT": ht[0], "MT": mt[0], "languages": len(tests),
                         "HT mean": float(np.mean([mh[x] for x, _ in tests])),
                         "MT mean": float(np.mean([mm[x] for x, _ in tests])), "HT - MT": diff,
                         "pooled HT - MT": pooled["diff"], "ci_low": pooled["ci_low"], "ci_high": pooled["ci_high"],
                         "p_value": pooled["p_value"], "alternative": side,
                         "expected": expect.get(tier, "reported only"),
                         "HT higher": sum(mh[x] > mm[x] for x, _ in tests),
                         "HT significantly higher (Holm)": sum(p < ALPHA and t["diff"] > 0
                                                               for p, (_, t) in zip(held, tests, strict=True)),
                         "MT significantly higher (Holm)": sum(p < ALPHA and t["diff"] < 0
                                                               for p, (_, t) in zip(held, tests, strict=True))})
            if tier in expect:
                right_way = pooled["diff"] > 0 if expect[tier] == "human" else pooled["diff"] < 0
                verdicts.append(right_way and pooled["significant"])
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
                    f"pooled {r['pooled HT - MT']:+.1f} [{r['ci_low']:+.1f}, {r['ci_high']:+.1f}], "
                    f"{'' if r['alternative'] == 'two-sided' else 'one-sided '}p={r['p_value']:.3f}; "
                    f"HT higher on {r['HT higher']}/{r['languages']}, significantly after Holm: HT "
                    f"{r['HT significantly higher (Holm)']}, MT {r['MT significantly higher (Holm)']})" for r in rows)
    return c.finding(HOLDS if all(verdicts) else FAILS, why,
                     "per resource tier, the same languages in their human-translated and machine-translated "
                     f"versions (same question ids): mean HT - MT; on the pooled questions of a tier a {PAIRED_TEST}, "
                     f"one-sided where the claim expects a side; {VERDICT_RULE}: the tiers "
                     f"{', '.join(f'{k}: {v} higher' for k, v in expect.items())}, for every system; beside it, per "
                     "language the same test (two-sided), Holm-corrected within each tier",
                     rows)
