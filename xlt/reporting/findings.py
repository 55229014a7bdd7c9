"""Findings of the benchmarks' papers, checked on the runs of a comparison (``python -m xlt.report --compare``).

A benchmark's definition declares its paper's claims as data (:attr:`Benchmark.findings
<xlt.data.benchmarks.base.Benchmark.findings>`: :class:`~xlt.data.benchmarks.base.Claim` objects); this
module holds the generic machinery and the check kinds a claim names (:data:`CHECKS`). :func:`check_findings`
runs the claims of every benchmark kind the compared runs evaluated. Each check returns a :class:`Finding`
(id ``<finding_prefix>_<claim id>``): the claim, a verdict (``holds`` / ``does not hold`` / ``cannot be
tested``), why, the numbers and the test behind it. Which run is which model and setting comes from each
run's recorded config (``config.yaml``), never from its name:

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

Check kinds (``Claim.check``) and their ``params``:

* ``family_best_on_levels``: of ``families`` (same setting and size), ``family`` has the highest mean
  accuracy on the ``levels`` (``"lowest"``: the lowest level present; ``"above_lowest"``: every level
  above it) of the language column ``column`` (default ``resource``; levels ordered by ``order``,
  default :data:`RESOURCE_ORDER`);
* ``family_most_at_or_above``: of ``families``, ``family`` has the most languages at or above ``threshold``;
* ``translate_train_all_beats_zero_shot``: for the same model config, translate-train-all is higher;
* ``translate_test_beats_in_language_llm``: for an LLM (``systems: any``: any system), translate-test is higher
  on more than half the languages;
* ``rankings_change``: the systems' ranks differ between subsets ``a`` and ``b``;
* ``higher_where_column_is``: accuracy is higher on languages whose ``column`` is ``a`` than ``b`` (named
  ``a_name`` / ``b_name`` in the numbers, ``a_label`` / ``b_label`` in words; ``exclude_pivot`` leaves the
  benchmark's pivot language out).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from xlt.data.benchmarks import Benchmark, get_benchmark
from xlt.data.benchmarks.base import Claim
from xlt.errors import ConfigError
from xlt.scoring.metrics import paired_bootstrap
from xlt.scoring.results import Job, read_predictions

HOLDS, FAILS, UNTESTABLE = "holds", "does not hold", "cannot be tested"
# The model families xlt tells apart from a run's config.
FAMILIES = ("XLM-R", "XLM-V", "InfoXLM")
# Matched in this order on the model's name and path (InfoXLM and XLM-V before the XLM-R prefix).
_FAMILY_PATTERNS = (("InfoXLM", re.compile(r"infoxlm", re.I)),
                    ("XLM-V", re.compile(r"xlm[-_]?v(?![a-z])", re.I)),
                    ("XLM-R", re.compile(r"xlm[-_]?r(oberta)?(?![a-z])|xlm-roberta", re.I)))
# Resource levels from high to low (the language table's default tiers, or the labels of a user grouping file).
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
        from xlt.scoring.results import first_result

        first = first_result(run.path, benchmark)
        return first is not None and bool(first[1].get("translate_test", False))
    return bool(flag)


def direct_benchmark(system: System, kind: str) -> str | None:
    """The first benchmark of the system of kind ``kind`` evaluated in-language (not translate-test)."""
    run = system.runs[0]
    for name in sorted(run.results):
        if run.results[name].kind == kind and not is_translate_test(run, name):
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


_CORRECT: dict[tuple[str, str, str], dict[str, bool]] = {}


def _correct(run: Any, benchmark: str, lang: str) -> dict[str, bool]:
    """Per question id, whether the run answered it right (read once per :func:`check_findings` call)."""
    from xlt.run import RunDir

    key = (str(run.path), benchmark, lang)
    if key not in _CORRECT:
        job = Job(benchmark, lang, run.results[benchmark].kind)
        _CORRECT[key] = {str(p["id"]): p["prediction"] == p["gold"] for p in read_predictions(RunDir(run.path), job)}
    return _CORRECT[key]


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


# --- the check kinds -----------------------------------------------------------------------------------


@dataclass
class Check:
    """What a check kind gets: the systems compared, the benchmark whose claim it checks, the claim."""

    systems: list[System]
    groups: list[list[Any]]
    bench: Benchmark
    claim: Claim
    samples: int
    seed: int

    @property
    def id(self) -> str:
        return f"{self.bench.finding_prefix}_{self.claim.id}"

    @property
    def title(self) -> str:
        return self.bench.display_title

    def param(self, key: str, default: Any = None) -> Any:
        if key not in self.claim.params and default is None:
            raise ConfigError(f"{self.bench.kind}: finding {self.claim.id!r} (check {self.claim.check!r}) needs "
                              f"the parameter {key!r}; it has {sorted(self.claim.params)}")
        return self.claim.params.get(key, default)

    def finding(self, verdict: str, why: str, test: str = "", numbers: list[dict[str, Any]] | None = None) -> Finding:
        return Finding(self.id, self.bench.paper, self.claim.text, verdict, why, test, numbers or [])

    def untestable(self, why: str) -> Finding:
        return self.finding(UNTESTABLE, why)


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


def check_family_best_on_levels(c: Check) -> Finding:
    families = tuple(c.param("families"))
    target, which = c.param("family"), c.param("levels")
    column = c.param("column", "resource")
    order = tuple(c.param("order", RESOURCE_ORDER))
    if which not in ("lowest", "above_lowest"):
        raise ConfigError(f"{c.bench.kind}: finding {c.claim.id!r}: levels must be 'lowest' or 'above_lowest', got {which!r}")
    fam, benches, where = _family_benches(c, families)
    if fam is None:
        return c.untestable(where)
    means = {f: language_means(s, benches[f]) for f, s in fam.items()}
    shared = sorted(set.intersection(*(set(m) for m in means.values())))
    level_of = {k: v.lower() for k, v in language_attr(fam[target], benches[target], column).items()}
    levels = {lv for lv in (level_of.get(lang) for lang in shared) if lv in order}
    unknown = sorted({level_of.get(lang, "n/a") for lang in shared} - set(order) - {"n/a"})
    if len(levels) < 2:
        return c.untestable(f"needs languages of at least two known {c.bench.label(column)}s ({', '.join(order)}); the "
                            f"compared languages have {sorted(levels) or 'none'}"
                            + (f" and unordered labels {unknown}" if unknown else ""))
    ordered = [lv for lv in order if lv in levels]
    rows, winners, tests = [], {}, {}
    for lv in ordered:
        langs = [lang for lang in shared if level_of.get(lang) == lv]
        acc = {f: float(np.mean([means[f][lang] for lang in langs])) for f in families}
        rank = sorted(families, key=lambda f: -acc[f])
        winners[lv] = rank[0] if acc[rank[0]] > acc[rank[1]] else None  # a tie has no winner
        t = paired_test(fam[rank[1]], benches[rank[1]], fam[rank[0]], benches[rank[0]], langs, c.samples, c.seed)
        tests[lv] = t
        rows.append({column: lv, "languages": len(langs), **{f"{f} ({fam[f].label})": acc[f] for f in families},
                     "best": winners[lv] or "tie", "runner_up": rank[1], "best_minus_runner_up": t["diff"],
                     "p_value": t["p_value"], "significant": t["significant"]})
    test = (f"mean {c.title} accuracy over the languages of each {c.bench.label(column)} ({where}; levels from the "
            f"report's {column} column); paired bootstrap of the best against the runner-up on the pooled "
            "questions of the level")
    picked = ordered[:-1] if which == "above_lowest" else ordered[-1:]
    ok = all(winners[lv] == target for lv in picked)
    why = "; ".join(f"{lv}: best {winners[lv] or 'tie'} ({_fmt_test(tests[lv])} vs {rows[ordered.index(lv)]['runner_up']})"
                    for lv in picked)
    if ok and len(picked) > 1 and not all(tests[lv]["significant"] for lv in picked):
        why += "; the margin is not significant everywhere"
    return c.finding(HOLDS if ok else FAILS, why, test, rows)


def check_family_most_at_or_above(c: Check) -> Finding:
    families = tuple(c.param("families"))
    family, t = c.param("family"), float(c.param("threshold"))
    fam, benches, where = _family_benches(c, families)
    if fam is None:
        return c.untestable(where)
    key = f"languages >= {t:g} (mean over seeds)"
    counts = {f: _seed_stat(s, lambda r, b=benches[f]: int((r.results[b].per_language["accuracy"] >= t).sum())
                            if b in r.results else None) for f, s in fam.items()}
    rows = [{"model": f, "system": fam[f].label, key: counts[f][0], "std over seeds": counts[f][1],
             "seeds": len(fam[f].runs)} for f in families]
    best = max(counts[f][0] for f in families)
    leaders = [f for f in families if counts[f][0] == best]
    margin = counts[family][0] - max(counts[f][0] for f in families if f != family)
    spread = max(counts[f][1] for f in families)
    why = (f"{' and '.join(leaders)} {'has' if len(leaders) == 1 else 'share'} the most ({best:.1f}); "
           f"{family}'s margin over the next: {margin:+.1f} languages (largest std over seeds {spread:.1f})")
    return c.finding(HOLDS if leaders == [family] else FAILS, why,
                     f"languages with accuracy >= {t:g} per run, mean ± std over each system's seeds ({where})", rows)


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
        test = paired_test(z, bz, t, bt, shared, c.samples, c.seed)
        wins = sum(mt[lang] > mz[lang] for lang in shared)
        rows.append({"model": z.family or z.model_key_name(), "zero-shot": z.label, "translate-train-all": t.label,
                     "languages": len(shared), "zero-shot mean": float(np.mean([mz[x] for x in shared])),
                     "translate-train-all mean": float(np.mean([mt[x] for x in shared])),
                     "diff": test["diff"], "p_value": test["p_value"], "significant": test["significant"],
                     "languages where translate-train-all is higher": wins})
        if not test["diff"] > 0:
            fails.append(z.family or z.model_key_name())
    if not rows:
        return c.untestable("; ".join(untested))
    why = "; ".join(f"{r['model']}: {r['translate-train-all mean']:.1f} vs {r['zero-shot mean']:.1f} "
                    f"(diff {r['diff']:+.1f}, p={r['p_value']:.3f}, higher on {r['languages where translate-train-all is higher']}"
                    f"/{r['languages']} languages)" for r in rows)
    return c.finding(FAILS if fails else HOLDS, why,
                     "mean accuracy over the languages both evaluated; paired bootstrap on the pooled questions "
                     "(zero-shot seed k against translate-train-all seed k)", rows)


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
    if not keys:
        who = "an LLM (eval.scorer=llm)" if scope == "llm" else "a system"
        why = (f"needs {who} evaluated on {c.title} both in-language and translate-test "
               "(a benchmark entry with translate_test: true)")
        if direct or tt:
            why += f"; found the LLM only {'in-language' if direct else 'translate-test'}"
        if encoder_tt:
            why += f"; translate-test runs here are encoders only ({', '.join(encoder_tt)})"
        return c.untestable(why)
    rows, verdicts = [], []
    for k in keys:
        (sd, bd), (st, bt) = direct[k], tt[k]
        md, mt = language_means(sd, bd), language_means(st, bt)
        shared = sorted(set(md) & set(mt))
        per_lang = [paired_test(sd, bd, st, bt, [lang], c.samples, c.seed) for lang in shared]
        wins = sum(mt[x] > md[x] for x in shared)
        rows.append({"llm": json.loads(k).get("model") if k.startswith("{") else k, "in-language": f"{sd.label}:{bd}", "translate-test": f"{st.label}:{bt}",
                     "languages": len(shared), "translate-test higher": wins,
                     "significantly higher": sum(t["significant"] and t["diff"] > 0 for t in per_lang),
                     "significantly lower": sum(t["significant"] and t["diff"] < 0 for t in per_lang),
                     "in-language mean": float(np.mean([md[x] for x in shared])),
                     "translate-test mean": float(np.mean([mt[x] for x in shared]))})
        verdicts.append(wins > len(shared) / 2)
    why = "; ".join(f"{r['llm']}: translate-test higher on {r['translate-test higher']}/{r['languages']} languages "
                    f"({r['significantly higher']} significantly, {r['significantly lower']} significantly lower)"
                    for r in rows)
    return c.finding(HOLDS if all(verdicts) else FAILS, why,
                     "per language, translate-test vs in-language accuracy of the same LLM; 'most' = more than half "
                     "of the languages; paired bootstrap per language on the shared question ids", rows)


def check_rankings_change(c: Check) -> Finding:
    from xlt.reporting.compare import rankings, system_subset_scores

    a, b = c.param("a"), c.param("b")
    with_b = [(s, g, direct_benchmark(s, c.bench.kind)) for s, g in zip(c.systems, c.groups, strict=True)]
    with_b = [(s, g, name) for s, g, name in with_b if name is not None]
    bench = with_b[0][2] if with_b else None
    with_b = [(s, g, name) for s, g, name in with_b if name == bench]
    if len(with_b) < 2:
        return c.untestable(f"needs at least two systems evaluated on {c.title}; found {len(with_b)}")
    scores = system_subset_scores([g for _, g, _ in with_b], bench, (a, b))
    if scores[a].isna().any() or scores[b].isna().any():
        return c.untestable(f"a system has no {a} or no {b} questions in its results")
    ranks, changes = rankings(scores, (a, b), ((a, b),))
    ch = changes.iloc[0]
    table = scores.merge(ranks, on="system")
    rows = [{"system": r["system"], a: r[a], b: r[b], f"rank {a}": int(r[f"rank_{a}"]), f"rank {b}": int(r[f"rank_{b}"]),
             f"shift {a} to {b}": int(r[f"shift_{a}_to_{b}"])} for _, r in table.iterrows()]
    n = int(ch["rank_changes"])
    why = (f"{n} of {len(rows)} systems change rank from {a} to {b} (mean absolute position shift "
           f"{ch['mean_abs_position_shift']:.2f}) on {bench}")
    return c.finding(HOLDS if n > 0 else FAILS, why,
                     "systems ranked on each subset's mean accuracy over languages (mean over seeds); rank changes and "
                     "mean absolute position shift as the paper reports them (point estimates: predictions carry no "
                     "subset labels, so no paired test per subset)", rows)


def check_higher_where_column_is(c: Check) -> Finding:
    column, va, vb = c.param("column"), c.param("a"), c.param("b")
    na, nb = c.param("a_name", va), c.param("b_name", vb)
    la, lb = c.param("a_label", f"{column} {va}"), c.param("b_label", f"{column} {vb}")
    skip = {c.bench.pivot_language} if c.claim.params.get("exclude_pivot") else set()
    rows, verdicts = [], []
    for s in c.systems:
        bench = direct_benchmark(s, c.bench.kind)
        if bench is None:
            continue
        means = language_means(s, bench)
        value = language_attr(s, bench, column)
        in_a = [x for x in means if value.get(x) == va and x not in skip]
        in_b = [x for x in means if value.get(x) == vb and x not in skip]
        if not in_a or not in_b:
            continue
        xa, xb = np.array([means[x] for x in in_a]), np.array([means[x] for x in in_b])
        diff = float(xa.mean() - xb.mean())
        p = permutation_p(xa, xb, c.samples, c.seed)
        per_seed = _seed_stat(s, lambda r, bench=bench, in_a=in_a, in_b=in_b: _group_diff(r, bench, in_a, in_b))
        rows.append({"system": s.label, f"{na} languages": len(in_a), f"{nb} languages": len(in_b),
                     f"{na} mean": float(xa.mean()), f"{nb} mean": float(xb.mean()), f"{na} - {nb}": diff,
                     "std over seeds": per_seed[1], "p_value": p, "significant": bool(p < ALPHA)})
        verdicts.append(diff > 0)
    if not rows:
        return c.untestable(f"needs a {c.title} evaluation with both {la} ({na}) and {lb} ({nb}) languages "
                            f"(column {column!r} of the report)")
    why = "; ".join(f"{r['system']}: {na} {r[f'{na} mean']:.1f} vs {nb} {r[f'{nb} mean']:.1f} "
                    f"({r[f'{na} - {nb}']:+.1f}, p={r['p_value']:.3f})" for r in rows)
    left_out = f" ({', '.join(sorted(skip))}, the pivot language, left out)" if skip else ""
    return c.finding(HOLDS if all(verdicts) else FAILS, why,
                     f"mean accuracy over {na} languages{left_out} minus over {nb} languages, per system; languages "
                     "differ between the groups, so the test is a seeded permutation test of the language labels "
                     "(two-sided)", rows)


def _group_diff(run: Any, bench: str, in_a: list[str], in_b: list[str]) -> float | None:
    if bench not in run.results:
        return None
    df = run.results[bench].per_language
    acc = dict(zip(df["language"], df["accuracy"], strict=True))
    return float(np.mean([acc[x] for x in in_a]) - np.mean([acc[x] for x in in_b]))


CHECKS = {
    "family_best_on_levels": check_family_best_on_levels,
    "family_most_at_or_above": check_family_most_at_or_above,
    "translate_train_all_beats_zero_shot": check_translate_train_all_beats_zero_shot,
    "translate_test_beats_in_language_llm": check_translate_test_beats_in_language_llm,
    "rankings_change": check_rankings_change,
    "higher_where_column_is": check_higher_where_column_is,
}


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


def evaluated_kinds(runs: list[Any]) -> list[str]:
    """The benchmark kinds the runs evaluated, in order of first appearance."""
    return list(dict.fromkeys(r.results[name].kind for r in runs for name in sorted(r.results)))


def check_findings(runs: list[Any], samples: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """Every finding the definitions of the benchmarks ``runs`` evaluated declare (RunInfo objects of
    :mod:`xlt.reporting.compare`), as dicts; a claim naming an unknown check kind is a :class:`ConfigError`."""
    from xlt.reporting.compare import seed_groups

    groups = seed_groups(runs)
    systems = make_systems(groups)
    findings = []
    _CORRECT.clear()
    try:
        for kind in evaluated_kinds(runs):
            bench = get_benchmark(kind)
            for claim in bench.findings:
                if claim.check not in CHECKS:
                    raise ConfigError(f"{kind}: finding {claim.id!r} names the unknown check kind {claim.check!r}; "
                                      f"known: {sorted(CHECKS)}")
                findings.append(CHECKS[claim.check](Check(systems, groups, bench, claim, samples, seed)))
    finally:
        _CORRECT.clear()
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
