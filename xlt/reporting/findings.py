"""The seed papers' findings, checked on the runs of a comparison (``python -m xlt.report --compare``).

Each check returns a :class:`Finding`: the claim, a verdict (``holds`` / ``does not hold`` /
``cannot be tested``), why, the numbers and the test behind it. Which run is which model and setting
comes from each run's recorded config (``config.yaml``), never from its name:

* **model family** (XLM-R, XLM-V, InfoXLM) and size (base / large) from ``model.name`` and
  ``model.name_or_path`` (or ``eval.model`` when another model than the run's was scored);
* **setting**: ``translate-train-all`` when translations are configured (the rule of
  :func:`xlt.config.translate.translate_train_all`), else ``zero-shot``; ``llm`` when ``eval.scorer=llm``;
* **translate-test**: a benchmark whose config entry has ``translate_test: true``.

A *system* is a seed group of :func:`xlt.reporting.compare.seed_groups` (runs that differ only in
``seed``); its per-language accuracy is the mean over its seeds. Significance uses xlt's paired
bootstrap (:func:`xlt.scoring.metrics.paired_bootstrap`) on the questions both systems answered, the
k-th seed of one system paired with the k-th seed of the other, and the spread over seeds (std).

A finding *holds* when the point estimates go the paper's way; whether the margin is significant is
reported beside it (``why`` and the ``significant`` / ``p_value`` numbers), not folded into the verdict.

Belebele (Bandarkar et al., 2024): among XLM-R, XLM-V and InfoXLM in the same setting and size, InfoXLM is
best on high- and medium-resource languages and XLM-V on the lowest-resource ones; XLM-V has the most
languages >= 50, InfoXLM the most >= 70; translate-train-all beats zero-shot for the same model;
translate-test beats in-language evaluation on most languages for an LLM.
Global-MMLU (Singh et al., 2024): model rankings change between the culturally sensitive (CS) and
agnostic (CA) subsets; accuracy on human-translated (HT) vs machine-translated (MT) languages.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from xlt.data.benchmarks import get_benchmark
from xlt.scoring.metrics import THRESHOLDS, paired_bootstrap
from xlt.scoring.results import Job, read_predictions

HOLDS, FAILS, UNTESTABLE = "holds", "does not hold", "cannot be tested"
BELEBELE_PAPER = "Belebele (Bandarkar et al., 2024)"
GMMLU_PAPER = "Global-MMLU (Singh et al., 2024)"
FAMILIES = ("XLM-R", "XLM-V", "InfoXLM")
# Matched in this order on the model's name and path (InfoXLM and XLM-V before the XLM-R prefix).
_FAMILY_PATTERNS = (("InfoXLM", re.compile(r"infoxlm", re.I)),
                    ("XLM-V", re.compile(r"xlm[-_]?v(?![a-z])", re.I)),
                    ("XLM-R", re.compile(r"xlm[-_]?r(oberta)?(?![a-z])|xlm-roberta", re.I)))
# Resource levels from high to low (Global-MMLU tiers, or the labels of a user grouping file).
RESOURCE_ORDER = ("high", "medium", "mid", "low", "lowest")
ALPHA = 0.05


@dataclass
class Finding:
    id: str
    paper: str
    claim: str
    verdict: str
    why: str
    test: str = ""
    numbers: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class System:
    """One seed group, with what its config says it is."""

    label: str
    runs: list[Any]  # RunInfo
    family: str | None
    size: str | None
    setting: str  # "zero-shot" | "translate-train-all" | "llm"
    model_key: str  # the whole ``model`` section (same text: same model)
    llm_key: str | None  # LLM identity (eval.model + eval.llm), for scorer llm

    def describe(self) -> str:
        what = self.family or self.model_key_name()
        return f"{self.label} ({what}{' ' + self.size if self.size else ''}, {self.setting})"

    def model_key_name(self) -> str:
        return json.loads(self.model_key).get("name_or_path", "?") if self.model_key else "?"


def _get(cfg: dict[str, Any], dotted: str, default: Any = None) -> Any:
    node: Any = cfg
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def scored_model_names(cfg: dict[str, Any]) -> list[str]:
    """The names the scored model goes by in the config: the run's ``model`` section, or ``eval.model``."""
    evm = _get(cfg, "eval.model", "run")
    if evm not in (None, "run"):
        return [str(evm)]
    return [str(v) for v in (_get(cfg, "model.name"), _get(cfg, "model.name_or_path")) if v]


def model_family(cfg: dict[str, Any]) -> str | None:
    names = " ".join(scored_model_names(cfg))
    for family, pattern in _FAMILY_PATTERNS:
        if pattern.search(names):
            return family
    return None


def model_size(cfg: dict[str, Any]) -> str | None:
    names = " ".join(scored_model_names(cfg)).lower()
    for size in ("large", "base", "xl"):
        if re.search(rf"(?<![a-z]){size}(?![a-z])", names):
            return size
    return None


def training_setting(cfg: dict[str, Any]) -> str:
    from xlt.config.translate import translate_train_all

    if _get(cfg, "eval.scorer") == "llm":
        return "llm"
    view = OmegaConf.create({"translate": {"languages": _get(cfg, "translate.languages") or [],
                                           "import_dir": _get(cfg, "translate.import_dir")},
                             "stages": list(_get(cfg, "stages") or [])})
    return "translate-train-all" if translate_train_all(view) else "zero-shot"


def make_systems(groups: list[list[Any]]) -> list[System]:
    from xlt.reporting.compare import group_label

    out = []
    for g in groups:
        cfg = g[0].config
        llm = None
        if _get(cfg, "eval.scorer") == "llm":
            llm = json.dumps({"model": _get(cfg, "eval.model"), "llm": _get(cfg, "eval.llm")}, sort_keys=True, default=str)
        out.append(System(group_label(g), g, model_family(cfg), model_size(cfg), training_setting(cfg),
                          json.dumps(_get(cfg, "model") or {}, sort_keys=True, default=str), llm))
    return out


def is_translate_test(run: Any, benchmark: str) -> bool:
    """From the run's config entry (or, failing that, its results' recorded settings)."""
    flag = _get(run.config, f"eval.benchmarks.{benchmark}.translate_test")
    if flag is None and benchmark in run.results:
        first = sorted((run.path / "eval" / benchmark).glob("*.json"))
        first = [f for f in first if f.name != "plan.json"]
        return bool(first) and bool(json.loads(first[0].read_text()).get("translate_test", False))
    return bool(flag)


def direct_benchmark(system: System, kind_has_subsets: bool) -> str | None:
    """The first benchmark of the system evaluated in-language: Belebele (no subsets) or Global-MMLU."""
    run = system.runs[0]
    for name in sorted(run.results):
        res = run.results[name]
        if get_benchmark(res.kind).has_subsets == kind_has_subsets and not is_translate_test(run, name):
            return name
    return None


def language_means(system: System, benchmark: str, column: str = "accuracy") -> dict[str, float]:
    """Per language, the mean over the system's seeds of ``column``."""
    vals: dict[str, list[float]] = {}
    for r in system.runs:
        if benchmark not in r.results:
            continue
        df = r.results[benchmark].per_language
        if column not in df:
            continue
        for lang, v in zip(df["language"], df[column], strict=True):
            if v == v:  # not NaN
                vals.setdefault(lang, []).append(float(v))
    return {k: float(np.mean(v)) for k, v in vals.items()}


def language_attr(system: System, benchmark: str, column: str) -> dict[str, str]:
    df = system.runs[0].results[benchmark].per_language
    return dict(zip(df["language"], df[column].astype(str), strict=True)) if column in df else {}


def _correct(run: Any, benchmark: str, lang: str) -> dict[str, bool]:
    from xlt.run import RunDir

    job = Job(benchmark, lang, run.results[benchmark].kind)
    return {str(p["id"]): p["prediction"] == p["gold"] for p in read_predictions(RunDir(run.path), job)}


def paired_test(a: System, bench_a: str, b: System, bench_b: str, languages: list[str],
                samples: int, seed: int) -> dict[str, Any]:
    """Paired bootstrap of b - a on the pooled questions of ``languages`` (seed k of a with seed k of b)."""
    ca: list[bool] = []
    cb: list[bool] = []
    for ra, rb in zip(a.runs, b.runs, strict=False):
        for lang in languages:
            pa, pb = _correct(ra, bench_a, lang), _correct(rb, bench_b, lang)
            ids = sorted(set(pa) & set(pb))
            ca += [pa[i] for i in ids]
            cb += [pb[i] for i in ids]
    test = paired_bootstrap(ca, cb, samples, seed)
    return {**test, "questions": len(ca), "seed_pairs": min(len(a.runs), len(b.runs)),
            "significant": bool(test["p_value"] < ALPHA)}


def _seed_stat(system: System, fn) -> tuple[float, float]:
    vals = [fn(r) for r in system.runs]
    vals = [v for v in vals if v is not None]
    if not vals:
        return float("nan"), float("nan")
    return float(np.mean(vals)), float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0


def _fmt_test(t: dict[str, Any]) -> str:
    return (f"diff {t['diff']:+.1f} points [{t['ci_low']:+.1f}, {t['ci_high']:+.1f}], p={t['p_value']:.3f} "
            f"({'significant' if t['significant'] else 'not significant'} at {ALPHA}; {t['questions']} paired "
            f"questions, {t['seed_pairs']} seed pair(s))")


# --- Belebele: XLM-R vs XLM-V vs InfoXLM -----------------------------------------------------------


def three_family_group(systems: list[System]) -> tuple[dict[str, System] | None, str]:
    """One XLM-R, XLM-V and InfoXLM system of the same setting and size (the first such group), or why none."""
    found: dict[tuple[str, str | None], dict[str, System]] = {}
    for s in systems:
        if s.family in FAMILIES and s.setting != "llm":
            found.setdefault((s.setting, s.size), {}).setdefault(s.family, s)
    for (setting, size), fam in found.items():
        if len(fam) == len(FAMILIES):
            return fam, f"{setting}, {size or 'unknown size'}"
    have = "; ".join(f"{setting} {size or '?'}: {', '.join(sorted(f))}" for (setting, size), f in found.items())
    return None, ("needs an XLM-R, an XLM-V and an InfoXLM system in the same setting (zero-shot or "
                  f"translate-train-all) and size; these runs have {have or 'none of these models'}")


def _untestable(fid: str, paper: str, claim: str, why: str) -> Finding:
    return Finding(fid, paper, claim, UNTESTABLE, why)


def check_resource_winners(systems: list[System], samples: int, seed: int) -> list[Finding]:
    claim_hm = "InfoXLM is the best of XLM-R, XLM-V and InfoXLM on high- and medium-resource languages"
    claim_low = "XLM-V is the best of XLM-R, XLM-V and InfoXLM on the lowest-resource languages"
    fam, where = three_family_group(systems)
    if fam is None:
        return [_untestable("belebele_infoxlm_best_high_medium", BELEBELE_PAPER, claim_hm, where),
                _untestable("belebele_xlmv_best_lowest", BELEBELE_PAPER, claim_low, where)]
    benches = {f: direct_benchmark(s, False) for f, s in fam.items()}
    if any(b is None for b in benches.values()):
        why = "needs Belebele results (in-language) for all three systems"
        return [_untestable("belebele_infoxlm_best_high_medium", BELEBELE_PAPER, claim_hm, why),
                _untestable("belebele_xlmv_best_lowest", BELEBELE_PAPER, claim_low, why)]
    means = {f: language_means(s, benches[f]) for f, s in fam.items()}
    shared = sorted(set.intersection(*(set(m) for m in means.values())))
    level_of = {k: v.lower() for k, v in language_attr(fam["InfoXLM"], benches["InfoXLM"], "resource").items()}
    levels = {lv for lv in (level_of.get(lang) for lang in shared) if lv in RESOURCE_ORDER}
    unknown = sorted({level_of.get(lang, "n/a") for lang in shared} - set(RESOURCE_ORDER) - {"n/a"})
    if len(levels) < 2:
        why = (f"needs languages of at least two known resource levels ({', '.join(RESOURCE_ORDER)}); the "
               f"compared languages have {sorted(levels) or 'none'}" + (f" and unordered labels {unknown}" if unknown else ""))
        return [_untestable("belebele_infoxlm_best_high_medium", BELEBELE_PAPER, claim_hm, why),
                _untestable("belebele_xlmv_best_lowest", BELEBELE_PAPER, claim_low, why)]
    ordered = [lv for lv in RESOURCE_ORDER if lv in levels]
    rows, winners, tests = [], {}, {}
    for lv in ordered:
        langs = [lang for lang in shared if level_of.get(lang) == lv]
        acc = {f: float(np.mean([means[f][lang] for lang in langs])) for f in FAMILIES}
        rank = sorted(FAMILIES, key=lambda f: -acc[f])
        winners[lv] = rank[0] if acc[rank[0]] > acc[rank[1]] else None  # a tie has no winner
        t = paired_test(fam[rank[1]], benches[rank[1]], fam[rank[0]], benches[rank[0]], langs, samples, seed)
        tests[lv] = t
        rows.append({"resource": lv, "languages": len(langs), **{f"{f} ({fam[f].label})": acc[f] for f in FAMILIES},
                     "best": winners[lv] or "tie", "runner_up": rank[1], "best_minus_runner_up": t["diff"],
                     "p_value": t["p_value"], "significant": t["significant"]})
    test = (f"mean Belebele accuracy over the languages of each resource level ({where}; resource levels from "
            "the report's resource column); paired bootstrap of the best against the runner-up on the pooled "
            "questions of the level")
    high_mid, lowest = ordered[:-1], ordered[-1]
    ok_hm = all(winners[lv] == "InfoXLM" for lv in high_mid)
    sig_hm = all(tests[lv]["significant"] for lv in high_mid)
    why_hm = "; ".join(f"{lv}: best {winners[lv] or 'tie'} ({_fmt_test(tests[lv])} vs {rows[i]['runner_up']})"
                       for i, lv in enumerate(ordered[:-1]))
    low = rows[-1]
    why_low = f"{lowest}: best {winners[lowest] or 'tie'} ({_fmt_test(tests[lowest])} vs {low['runner_up']})"
    return [
        Finding("belebele_infoxlm_best_high_medium", BELEBELE_PAPER, claim_hm, HOLDS if ok_hm else FAILS,
                why_hm + ("" if not ok_hm or sig_hm else "; the margin is not significant everywhere"), test, rows),
        Finding("belebele_xlmv_best_lowest", BELEBELE_PAPER, claim_low,
                HOLDS if winners[lowest] == "XLM-V" else FAILS, why_low, test, rows),
    ]


def check_threshold_counts(systems: list[System]) -> list[Finding]:
    out = []
    fam, where = three_family_group(systems)
    for family, threshold in (("XLM-V", THRESHOLDS[0]), ("InfoXLM", THRESHOLDS[1])):
        t = int(threshold)
        fid = f"belebele_{family.lower().replace('-', '')}_most_ge_{t}"
        claim = f"{family} has the most Belebele languages at or above {t}% of XLM-R, XLM-V and InfoXLM"
        if fam is None:
            out.append(_untestable(fid, BELEBELE_PAPER, claim, where))
            continue
        benches = {f: direct_benchmark(s, False) for f, s in fam.items()}
        if any(b is None for b in benches.values()):
            out.append(_untestable(fid, BELEBELE_PAPER, claim, "needs Belebele results for all three systems"))
            continue
        counts = {f: _seed_stat(s, lambda r, b=benches[f], t=t: int((r.results[b].per_language["accuracy"] >= t).sum())
                                if b in r.results else None) for f, s in fam.items()}
        rows = [{"model": f, "system": fam[f].label, f"languages >= {t} (mean over seeds)": counts[f][0],
                 "std over seeds": counts[f][1], "seeds": len(fam[f].runs)} for f in FAMILIES]
        best = max(counts[f][0] for f in FAMILIES)
        leaders = [f for f in FAMILIES if counts[f][0] == best]
        holds = leaders == [family]
        margin = counts[family][0] - max(counts[f][0] for f in FAMILIES if f != family)
        spread = max(counts[f][1] for f in FAMILIES)
        why = (f"{' and '.join(leaders)} {'has' if len(leaders) == 1 else 'share'} the most ({best:.1f}); "
               f"{family}'s margin over the next: {margin:+.1f} languages (largest std over seeds {spread:.1f})")
        out.append(Finding(fid, BELEBELE_PAPER, claim, HOLDS if holds else FAILS, why,
                           f"languages with accuracy >= {t} per run, mean ± std over each system's seeds ({where})", rows))
    return out


def check_translate_train_all(systems: list[System], samples: int, seed: int) -> Finding:
    fid, claim = "belebele_translate_train_all_beats_zero_shot", \
        "translate-train-all beats zero-shot for the same model (Belebele)"
    pairs = [(z, t) for z in systems if z.setting == "zero-shot"
             for t in systems if t.setting == "translate-train-all" and t.model_key == z.model_key]
    if not pairs:
        have = ", ".join(s.describe() for s in systems if s.setting != "llm") or "no encoder runs"
        return _untestable(fid, BELEBELE_PAPER, claim, "needs a zero-shot and a translate-train-all system with the "
                           f"same model config; these runs have {have}")
    rows, fails, untested = [], [], []
    for z, t in pairs:
        bz, bt = direct_benchmark(z, False), direct_benchmark(t, False)
        if bz is None or bt is None:
            untested.append(f"{z.label} / {t.label}: no Belebele results")
            continue
        mz, mt = language_means(z, bz), language_means(t, bt)
        shared = sorted(set(mz) & set(mt))
        test = paired_test(z, bz, t, bt, shared, samples, seed)
        wins = sum(mt[lang] > mz[lang] for lang in shared)
        rows.append({"model": z.family or z.model_key_name(), "zero-shot": z.label, "translate-train-all": t.label,
                     "languages": len(shared), "zero-shot mean": float(np.mean([mz[x] for x in shared])),
                     "translate-train-all mean": float(np.mean([mt[x] for x in shared])),
                     "diff": test["diff"], "p_value": test["p_value"], "significant": test["significant"],
                     "languages where translate-train-all is higher": wins})
        if not test["diff"] > 0:
            fails.append(z.family or z.model_key_name())
    if not rows:
        return _untestable(fid, BELEBELE_PAPER, claim, "; ".join(untested))
    why = "; ".join(f"{r['model']}: {r['translate-train-all mean']:.1f} vs {r['zero-shot mean']:.1f} "
                    f"(diff {r['diff']:+.1f}, p={r['p_value']:.3f}, higher on {r['languages where translate-train-all is higher']}"
                    f"/{r['languages']} languages)" for r in rows)
    return Finding(fid, BELEBELE_PAPER, claim, FAILS if fails else HOLDS, why,
                   "mean accuracy over the languages both evaluated; paired bootstrap on the pooled questions "
                   "(zero-shot seed k against translate-train-all seed k)", rows)


def check_translate_test_llm(systems: list[System], samples: int, seed: int) -> Finding:
    fid, claim = "belebele_translate_test_beats_in_language_llm", \
        "translate-test beats in-language evaluation on most Belebele languages for an LLM"
    direct: dict[str, tuple[System, str]] = {}
    tt: dict[str, tuple[System, str]] = {}
    encoder_tt = []
    for s in systems:
        for name in sorted(s.runs[0].results):
            res = s.runs[0].results[name]
            if get_benchmark(res.kind).has_subsets:
                continue
            is_tt = is_translate_test(s.runs[0], name)
            if s.llm_key is None:
                if is_tt:
                    encoder_tt.append(s.label)
                continue
            (tt if is_tt else direct).setdefault(s.llm_key, (s, name))
    keys = [k for k in direct if k in tt]
    if not keys:
        why = ("needs an LLM (eval.scorer=llm) evaluated on Belebele both in-language and translate-test "
               "(a benchmark entry with translate_test: true)")
        if direct or tt:
            why += f"; found the LLM only {'in-language' if direct else 'translate-test'}"
        if encoder_tt:
            why += f"; translate-test runs here are encoders only ({', '.join(encoder_tt)})"
        return _untestable(fid, BELEBELE_PAPER, claim, why)
    rows, verdicts = [], []
    for k in keys:
        (sd, bd), (st, bt) = direct[k], tt[k]
        md, mt = language_means(sd, bd), language_means(st, bt)
        shared = sorted(set(md) & set(mt))
        per_lang = [paired_test(sd, bd, st, bt, [lang], samples, seed) for lang in shared]
        wins = sum(mt[x] > md[x] for x in shared)
        rows.append({"llm": json.loads(k).get("model"), "in-language": f"{sd.label}:{bd}", "translate-test": f"{st.label}:{bt}",
                     "languages": len(shared), "translate-test higher": wins,
                     "significantly higher": sum(t["significant"] and t["diff"] > 0 for t in per_lang),
                     "significantly lower": sum(t["significant"] and t["diff"] < 0 for t in per_lang),
                     "in-language mean": float(np.mean([md[x] for x in shared])),
                     "translate-test mean": float(np.mean([mt[x] for x in shared]))})
        verdicts.append(wins > len(shared) / 2)
    why = "; ".join(f"{r['llm']}: translate-test higher on {r['translate-test higher']}/{r['languages']} languages "
                    f"({r['significantly higher']} significantly, {r['significantly lower']} significantly lower)"
                    for r in rows)
    return Finding(fid, BELEBELE_PAPER, claim, HOLDS if all(verdicts) else FAILS, why,
                   "per language, translate-test vs in-language accuracy of the same LLM; 'most' = more than half "
                   "of the languages; paired bootstrap per language on the shared question ids", rows)


# --- Global-MMLU -------------------------------------------------------------------------------------


def check_cs_ca_rankings(systems: list[System], groups: list[list[Any]]) -> Finding:
    from xlt.reporting.compare import rankings, system_subset_scores

    fid, claim = "gmmlu_rankings_change_cs_ca", \
        "model rankings change between the culturally sensitive (CS) and culturally agnostic (CA) subsets"
    with_gm = [(s, g, direct_benchmark(s, True)) for s, g in zip(systems, groups, strict=True)]
    with_gm = [(s, g, b) for s, g, b in with_gm if b is not None]
    bench = with_gm[0][2] if with_gm else None
    with_gm = [(s, g, b) for s, g, b in with_gm if b == bench]
    if len(with_gm) < 2:
        return _untestable(fid, GMMLU_PAPER, claim, f"needs at least two systems evaluated on Global-MMLU; found {len(with_gm)}")
    scores = system_subset_scores([g for _, g, _ in with_gm], bench)
    if scores["CS"].isna().any() or scores["CA"].isna().any():
        return _untestable(fid, GMMLU_PAPER, claim, "a system has no CS or no CA questions in its results")
    ranks, changes = rankings(scores)
    ch = changes[(changes["from"] == "CS") & (changes["to"] == "CA")].iloc[0]
    table = scores.merge(ranks, on="system")
    rows = [{"system": r["system"], "CS": r["CS"], "CA": r["CA"], "rank CS": int(r["rank_CS"]), "rank CA": int(r["rank_CA"]),
             "shift CS to CA": int(r["shift_CS_to_CA"])} for _, r in table.iterrows()]
    n = int(ch["rank_changes"])
    why = (f"{n} of {len(rows)} systems change rank from CS to CA (mean absolute position shift "
           f"{ch['mean_abs_position_shift']:.2f}) on {bench}")
    return Finding(fid, GMMLU_PAPER, claim, HOLDS if n > 0 else FAILS, why,
                   "systems ranked on each subset's mean accuracy over languages (mean over seeds); rank changes and "
                   "mean absolute position shift as the paper reports them (point estimates: predictions carry no "
                   "subset labels, so no paired test per subset)", rows)


def check_human_vs_machine(systems: list[System], samples: int, seed: int) -> Finding:
    fid, claim = "gmmlu_human_translated_above_machine_translated", \
        "accuracy is higher on human-translated (HT) than on machine-translated (MT) Global-MMLU languages"
    rows, verdicts = [], []
    for s in systems:
        bench = direct_benchmark(s, True)
        if bench is None:
            continue
        means = language_means(s, bench, "acc_full")
        source = language_attr(s, bench, "translation")
        ht = [x for x in means if source.get(x) == "human" and x != "en"]  # English is the original, not translated
        mt = [x for x in means if source.get(x) == "machine"]
        if not ht or not mt:
            continue
        a, b = np.array([means[x] for x in ht]), np.array([means[x] for x in mt])
        diff = float(a.mean() - b.mean())
        p = permutation_p(a, b, samples, seed)
        per_seed = _seed_stat(s, lambda r, bench=bench, ht=ht, mt=mt: _ht_mt_diff(r, bench, ht, mt))
        rows.append({"system": s.label, "HT languages": len(ht), "MT languages": len(mt), "HT mean": float(a.mean()),
                     "MT mean": float(b.mean()), "HT - MT": diff, "std over seeds": per_seed[1], "p_value": p,
                     "significant": bool(p < ALPHA)})
        verdicts.append(diff > 0)
    if not rows:
        return _untestable(fid, GMMLU_PAPER, claim, "needs a Global-MMLU (full) evaluation with both human- and "
                           "machine-translated languages (Global-MMLU Lite has human translations only)")
    why = "; ".join(f"{r['system']}: HT {r['HT mean']:.1f} vs MT {r['MT mean']:.1f} ({r['HT - MT']:+.1f}, p={r['p_value']:.3f})"
                    for r in rows)
    return Finding(fid, GMMLU_PAPER, claim, HOLDS if all(verdicts) else FAILS, why,
                   "mean full-test accuracy over HT languages (English, the original, left out) minus over MT "
                   "languages, per system; languages differ between the groups, so the test is a seeded "
                   "permutation test of the language labels (two-sided)", rows)


def _ht_mt_diff(run: Any, bench: str, ht: list[str], mt: list[str]) -> float | None:
    if bench not in run.results:
        return None
    acc = dict(zip(run.results[bench].per_language["language"], run.results[bench].per_language["acc_full"], strict=True))
    return float(np.mean([acc[x] for x in ht]) - np.mean([acc[x] for x in mt]))


def permutation_p(a: np.ndarray, b: np.ndarray, samples: int = 1000, seed: int = 0) -> float:
    """Two-sided permutation p-value of mean(a) - mean(b) (seeded; the observed split counts once)."""
    pooled = np.concatenate([a, b])
    observed = abs(a.mean() - b.mean())
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(samples):
        perm = rng.permutation(pooled)
        hits += abs(perm[: len(a)].mean() - perm[len(a):].mean()) >= observed - 1e-12
    return float((hits + 1) / (samples + 1))


# --- all -----------------------------------------------------------------------------------------------


def check_findings(runs: list[Any], samples: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """Every finding on ``runs`` (RunInfo objects of :mod:`xlt.reporting.compare`), as dicts."""
    from xlt.reporting.compare import seed_groups

    groups = seed_groups(runs)
    systems = make_systems(groups)
    findings = [*check_resource_winners(systems, samples, seed), *check_threshold_counts(systems),
                check_translate_train_all(systems, samples, seed), check_translate_test_llm(systems, samples, seed),
                check_cs_ca_rankings(systems, groups), check_human_vs_machine(systems, samples, seed)]
    return [f.to_dict() for f in findings]


def add_findings(runs: list[Any], payload: dict[str, Any], samples: int = 1000, seed: int = 0) -> str:
    """Check the findings on ``runs``, store them (and the systems) in the comparison ``payload``;
    return the Markdown section."""
    payload["systems"] = systems_table(runs)
    payload["findings"] = check_findings(runs, samples, seed)
    return findings_markdown(payload["findings"], payload["systems"])


def systems_table(runs: list[Any]) -> list[dict[str, Any]]:
    """What each system is, as the findings read it from the configs."""
    from xlt.reporting.compare import seed_groups

    return [{"system": s.label, "model": ", ".join(scored_model_names(s.runs[0].config)), "family": s.family or "other",
             "size": s.size or "?", "setting": s.setting, "seeds": ",".join(str(r.seed) for r in s.runs),
             "runs": ", ".join(r.label for r in s.runs)}
            for s in make_systems(seed_groups(runs))]


def findings_markdown(findings: list[dict[str, Any]], systems: list[dict[str, Any]]) -> str:
    import pandas as pd

    from xlt.markdown import markdown_table as md_table
    from xlt.reporting.render import markdown_table

    out = ["\n## Findings of the papers\n",
           "\nSystems as the checks read them from each run's config (model, setting; seeds grouped):\n\n",
           markdown_table(pd.DataFrame(systems)), "\n",
           md_table(["finding", "paper", "verdict", "why"],
                    [[f["claim"], f["paper"], f"**{f['verdict']}**", f["why"]] for f in findings])]
    for f in findings:
        if f["numbers"]:
            out += [f"\n### {f['claim']}: {f['verdict']}\n\nTest: {f['test']}.\n\n",
                    markdown_table(pd.DataFrame(f["numbers"]), digits=3)]
    return "".join(out)
