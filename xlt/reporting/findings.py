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

A *system* is a seed group of :func:`xlt.reporting.run_tables.seed_groups` (runs that differ only in
``seed``); its per-language accuracy is the mean over its seeds. Comparisons on the same questions use
:func:`paired_test`: each question's score is the mean over a system's seeds, the interval comes from a
bootstrap resampling the questions once and the p-value from a paired permutation test (seeds are not extra
questions: pooling them would shrink p-values k-fold). No shared language or question is "cannot be
tested", with the reason, never a verdict on NaN.

**Verdicts are decided by tests** (:mod:`xlt.reporting.verdicts`): a finding *holds* only when its test is
significant at ``ALPHA`` (0.05), one-sided in the paper's direction, with the null hypothesis the design
implies; a claim with several parts needs every part significant (intersection-union). The effect, its
interval and the p-value are reported beside the verdict; per-language tests are given raw and
Holm-corrected. tests/reporting/test_calibration.py checks every finding's rate of "holds" on simulated
equal systems and its power (docs/findings.md). Each finding carries the paper's sentence it checks
(``paper_says``: quoted when it is the paper's text, else marked as a paraphrase, with where it comes from)
and what it needs (``needs``).

Check kinds (``Claim.check``) and their ``params``:

* ``family_best_on_levels``: of ``families`` (same setting and size), ``family`` has the highest mean
  accuracy on the ``levels`` (``"lowest"``: the taxonomy's ``lowest`` level, which must be among the
  compared languages; ``"above_lowest"``: every level above it) of the language column ``column``
  (default ``resource``; levels ordered by ``order``, default :data:`RESOURCE_ORDER`);
* ``family_most_above`` / ``family_most_at_or_above``: of ``families``, ``family`` has the most languages
  above (at or above) ``threshold``, counted over the languages all of them have;
* ``translate_train_all_beats_zero_shot``: for the same model config, translate-train-all is higher;
* ``translate_test_beats_in_language_llm``: for an LLM (``systems: any``: any system), translate-test is higher
  on more than half the languages;
* ``rank_changes_per_language``: per language, the systems (at least ``min_systems``, default 3) ranked on
  ``base`` and on ``a`` and ``b``; rank changes and position shifts against ``base``, averaged over the
  shared languages; holds when ``b`` moves more than ``a`` beyond what the subsets' sizes explain (a
  permutation of the ``a`` / ``b`` labels, sizes kept; :mod:`xlt.reporting.rank_changes`);
* ``human_above_machine_same_language``: a human-translated and a machine-translated
  (``machine_translated: true``) entry of the benchmark, compared on the same languages per ``tiers``;
  ``expect`` says which side each tier's verdict expects higher;
* ``higher_where_column_is``: accuracy is higher on languages whose ``column`` is ``a`` than ``b`` (named
  ``a_name`` / ``b_name`` in the numbers, ``a_label`` / ``b_label`` in words; ``exclude_pivot`` leaves the
  benchmark's pivot language out).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from math import comb
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from xlt import languages as langtab
from xlt.config.eval import is_machine_translated as machine_translated_entry
from xlt.config.translate import translate_train_all
from xlt.data.benchmarks import Benchmark, get_benchmark
from xlt.data.benchmarks.base import Claim
from xlt.errors import ConfigError
from xlt.markdown import markdown_table as md_table
from xlt.metrics import bootstrap_mean_diff, holm_adjust, permutation_p_value
from xlt.reporting import rank_changes as rc
from xlt.reporting.run_tables import group_label, seed_groups
from xlt.reporting.render import markdown_table
from xlt.reporting.verdicts import ALPHA, all_significant, count_above_test, group_permutation_test, wins_test
from xlt.run import RunDir
from xlt.scoring.results import Job, first_result, read_predictions

HOLDS, FAILS, UNTESTABLE = "holds", "does not hold", "cannot be tested"
# The model families xlt tells apart from a run's config.
FAMILIES = ("XLM-R", "XLM-V", "InfoXLM")
# Matched in this order on the model's name and path (InfoXLM and XLM-V before the XLM-R prefix).
_FAMILY_PATTERNS = (("InfoXLM", re.compile(r"infoxlm", re.I)),
                    ("XLM-V", re.compile(r"xlm[-_]?v(?![a-z])", re.I)),
                    ("XLM-R", re.compile(r"xlm[-_]?r(oberta)?(?![a-z])|xlm-roberta", re.I)))
# Resource levels from high to low (the language table's default tiers, or the labels of a user grouping file).
RESOURCE_ORDER = ("high", "medium", "mid", "low", "lowest")


@dataclass
class Finding:
    id: str
    paper: str
    claim: str
    verdict: str
    why: str
    test: str = ""
    numbers: list[dict[str, Any]] = field(default_factory=list)
    paper_says: str = ""  # the paper's sentence, quoted or marked as a paraphrase (Claim.cited)
    needs: str = ""  # the systems and languages the check needs

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
    if _get(cfg, "eval.scorer") == "llm":
        return "llm"
    view = OmegaConf.create({"translate": {"languages": _get(cfg, "translate.languages") or [],
                                           "import_dir": _get(cfg, "translate.import_dir")},
                             "stages": list(_get(cfg, "stages") or [])})
    return "translate-train-all" if translate_train_all(view) else "zero-shot"


def make_systems(groups: list[list[Any]]) -> list[System]:
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
        first = first_result(run.path, benchmark)
        return first is not None and bool(first[1].get("translate_test", False))
    return bool(flag)


def is_machine_translated(run: Any, benchmark: str) -> bool:
    """Whether the run's benchmark entry is a machine-translated version of the benchmark's languages: one
    xlt made (``machine_translate_from`` in its config entry) or a copy labelled ``machine_translated: true``."""
    entry = _get(run.config, f"eval.benchmarks.{benchmark}")
    return isinstance(entry, dict) and machine_translated_entry(entry)


def direct_benchmark(system: System, kind: str) -> str | None:
    """The first benchmark of the system of kind ``kind`` evaluated in-language (not translate-test) on the
    benchmark's own test sets (not a machine-translated variant)."""
    run = system.runs[0]
    for name in sorted(run.results):
        if run.results[name].kind == kind and not is_translate_test(run, name) and not is_machine_translated(run, name):
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


_ROWS: dict[tuple[str, str, str], list[dict[str, Any]]] = {}


def run_predictions(run: Any, benchmark: str, lang: str) -> list[dict[str, Any]]:
    """The run's prediction rows of one language (read once per :func:`check_findings` call)."""
    key = (str(run.path), benchmark, lang)
    if key not in _ROWS:
        _ROWS[key] = read_predictions(RunDir(run.path), Job(benchmark, lang, run.results[benchmark].kind))
    return _ROWS[key]


def _correct(run: Any, benchmark: str, lang: str) -> dict[str, bool]:
    """Per question id, whether the run answered it right."""
    return {str(p["id"]): p["prediction"] == p["gold"] for p in run_predictions(run, benchmark, lang)}


_SCORES: dict[tuple[Any, ...], dict[str, float]] = {}


def seed_mean_correct(system: System, bench: str, lang: str) -> dict[str, float]:
    """Per question id answered by every seed of ``system``, the share of its seeds that got it right
    (``k / seeds``, computed once per :func:`check_findings` call)."""
    key = (tuple(str(r.path) for r in system.runs), bench, lang)
    if key not in _SCORES:
        per_seed = [_correct(r, bench, lang) for r in system.runs if bench in r.results]
        ids = set.intersection(*(set(p) for p in per_seed)) if per_seed else set()
        _SCORES[key] = {i: sum(p[i] for p in per_seed) / len(per_seed) for i in ids}
    return _SCORES[key]


def paired_scores(a: System, bench_a: str, b: System, bench_b: str, lang: str) -> tuple[np.ndarray, np.ndarray]:
    """Per question of ``lang`` that every seed of both systems answered, each system's share of seeds
    that got it right (a's, b's)."""
    ma, mb = seed_mean_correct(a, bench_a, lang), seed_mean_correct(b, bench_b, lang)
    ids = sorted(set(ma) & set(mb))
    return np.array([ma[i] for i in ids], dtype=float), np.array([mb[i] for i in ids], dtype=float)


def paired_test(a: System, bench_a: str, b: System, bench_b: str, languages: list[str],
                samples: int, seed: int, alternative: str = "two-sided") -> dict[str, Any]:
    """b - a over the questions of ``languages`` that every seed of both systems answered: the difference,
    its paired-bootstrap interval and the paired permutation p-value (``alternative``: ``greater`` tests
    b > a) of :func:`xlt.metrics.bootstrap_mean_diff`.

    Each question's difference is b's mean correctness over its seeds minus a's (seeds averaged *within*
    the question), and the questions are resampled (or their two scores swapped) once: a system's seeds
    answer the same questions, so pooling seed pairs as if they were more questions would shrink the
    p-value k-fold. ``questions`` counts distinct questions; NaN diff and p-value when there are none."""
    diffs = [y - x for lang in languages for x, y in zip(*paired_scores(a, bench_a, b, bench_b, lang), strict=True)]
    test = bootstrap_mean_diff(diffs, samples, seed, alternative=alternative)
    return {**test, "questions": len(diffs), "seeds": f"{len(a.runs)} vs {len(b.runs)}", "alternative": alternative,
            "significant": bool(test["p_value"] < ALPHA)}  # NaN < ALPHA is False


def _seed_stat(system: System, fn) -> tuple[float, float]:
    vals = [fn(r) for r in system.runs]
    vals = [v for v in vals if v is not None]
    if not vals:
        return float("nan"), float("nan")
    return float(np.mean(vals)), float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0


def _fmt_test(t: dict[str, Any]) -> str:
    side = "" if t.get("alternative", "two-sided") == "two-sided" else "one-sided "
    return (f"diff {t['diff']:+.1f} points [{t['ci_low']:+.1f}, {t['ci_high']:+.1f}], {side}p={t['p_value']:.3f} "
            f"({'significant' if t['significant'] else 'not significant'} at {ALPHA}; {t['questions']} paired "
            f"questions{'' if t['seeds'] == '1 vs 1' else ', seeds ' + t['seeds'] + ' averaged per question'})")


PAIRED_TEST = ("paired comparison over questions: each question's score is the mean over a system's seeds; 95% "
               "percentile interval from a bootstrap resampling the questions once, p-value from a paired "
               "permutation test (each question's two scores swapped at random, B draws)")
VERDICT_RULE = (f"the verdict holds only when the test is significant at alpha={ALPHA} in the paper's direction "
                "(one-sided); a claim with several parts needs every part significant (intersection-union test)")


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
        return Finding(self.id, self.bench.paper, self.claim.text, verdict, why, test, numbers or [],
                       self.claim.cited(), self.claim.needs)

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
        return c.untestable(f"needs languages of at least two known {c.bench.label(column)}s ({', '.join(order)}); the "
                            f"compared languages have {sorted(levels) or 'none'}"
                            + (f" and unordered labels {unknown}" if unknown else ""))
    label = c.bench.label(column)
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
    rows, winners, closest, p_parts = [], {}, {}, []
    for lv in ordered:
        langs = [lang for lang in shared if level_of.get(lang) == lv]
        acc = {f: float(np.mean([means[f][lang] for lang in langs])) for f in families}
        rank = sorted(families, key=lambda f: -acc[f])
        winners[lv] = rank[0] if acc[rank[0]] > acc[rank[1]] else None  # a tie has no winner
        # the target against each other family, one-sided (target higher); the part that decides is the
        # largest p-value (intersection-union), shown with the nearest competitor's difference and interval
        vs = {f: paired_test(fam[f], benches[f], fam[target], benches[target], langs, c.samples, c.seed, "greater")
              for f in others}
        nearest = max(others, key=lambda f: (vs[f]["p_value"], acc[f]))
        closest[lv] = (nearest, vs[nearest])
        p_max = max(t["p_value"] for t in vs.values())
        if lv in picked:
            p_parts.append(p_max)
        rows.append({column: lv, "languages": len(langs), **{f"{f} ({fam[f].label})": acc[f] for f in families},
                     "best": winners[lv] or "tie", f"{target} minus {nearest}": vs[nearest]["diff"],
                     "ci_low": vs[nearest]["ci_low"], "ci_high": vs[nearest]["ci_high"],
                     f"p ({target} above each other, one-sided, largest)": p_max, "significant": p_max < ALPHA})
    test = (f"mean {c.title} accuracy over the languages of each {c.bench.label(column)} ({where}; levels from the "
            f"report's {column} column); on the pooled questions of the level, {target} against each other family: "
            f"{PAIRED_TEST}, one-sided ({target} higher); {VERDICT_RULE}: {target} above every other family on "
            f"{'every level above ' + lowest if which == 'above_lowest' else 'the ' + lowest + ' level'}")
    ok = all(winners[lv] == target for lv in picked) and all_significant(p_parts)
    why = "; ".join(f"{lv}: best {winners[lv] or 'tie'}; {target} vs {closest[lv][0]}: {_fmt_test(closest[lv][1])}"
                    for lv in picked)
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
    per_seed = {f: _seed_stat(s, lambda r, b=benches[f]: count(r, b)) for f, s in fam.items()}
    tests = {}
    for f in families:
        if f == family:
            continue
        pairs = [paired_scores(fam[f], benches[f], fam[family], benches[family], lang) for lang in shared]
        tests[f] = count_above_test([y for _, y in pairs], [x for x, _ in pairs], t, strict, c.samples, c.seed)
    counts = {f: tests[f]["count_other"] for f in tests}
    counts[family] = next(iter(tests.values()))["count_target"]
    rows = [{"model": f, "system": fam[f].label, key: counts[f], "mean over seeds of per-run counts": per_seed[f][0],
             "std over seeds": per_seed[f][1], "seeds": len(fam[f].runs), "languages compared": len(shared),
             f"{family} minus this": (counts[family] - counts[f]) if f != family else None,
             "p (one-sided)": tests[f]["p_value"] if f in tests else None} for f in families]
    best = max(counts.values())
    leaders = [f for f in families if counts[f] == best]
    p_max = max(x["p_value"] for x in tests.values())
    ok = leaders == [family] and all_significant([x["p_value"] for x in tests.values()])
    nearest = max(tests, key=lambda f: (tests[f]["p_value"], counts[f]))
    why = (f"{' and '.join(leaders)} {'has' if len(leaders) == 1 else 'share'} the most ({best} of the "
           f"{len(shared)} languages all {len(families)} systems have); {family} minus {nearest}: "
           f"{counts[family] - counts[nearest]:+d} languages, one-sided p={p_max:.3f} (largest over the other "
           f"families; {'significant' if p_max < ALPHA else 'not significant'} at {ALPHA})")
    return c.finding(HOLDS if ok else FAILS, why,
                     f"languages whose seed-mean accuracy is {op} {t:g}, over the {len(shared)} languages all "
                     f"{len(families)} systems have ({where}; per-run counts, mean ± std over seeds, beside them); "
                     f"{family} against each other family: the difference of the counts, p-value from a paired "
                     "permutation test (in every language, each question's two scores swapped at random); "
                     f"{VERDICT_RULE}", rows)


def check_family_most_above(c: Check) -> Finding:
    return _family_most(c, strict=True)


def check_family_most_at_or_above(c: Check) -> Finding:
    return _family_most(c, strict=False)


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
    if untested:
        why += "; not compared: " + "; ".join(untested)
    return c.finding(FAILS if fails else HOLDS, why,
                     f"mean accuracy over the languages both evaluated; {PAIRED_TEST}, one-sided (translate-train-all "
                     f"higher); {VERDICT_RULE}: every pair", rows)


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
    if skipped:
        why += "; not compared: " + "; ".join(skipped)
    return c.finding(HOLDS if all(verdicts) else FAILS, why,
                     f"per language, translate-test vs in-language accuracy of the same {what}; 'most' = more than "
                     "half of the languages; the number of languages where translate-test is higher, its p-value "
                     "from a permutation test (each question's two scores swapped at random, in every language); "
                     f"{VERDICT_RULE}: more than half the languages and that many significant; beside it, per "
                     f"language a {PAIRED_TEST}, the p-values corrected with Holm's step-down method (family-wise "
                     f"error {ALPHA}), counts given corrected and uncorrected", rows)


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
        p = group_permutation_test(xa, xb, c.samples, c.seed, "greater")
        per_seed = _seed_stat(s, lambda r, bench=bench, in_a=in_a, in_b=in_b: _group_diff(r, bench, in_a, in_b))
        rows.append({"system": s.label, f"{na} languages": len(in_a), f"{nb} languages": len(in_b),
                     f"{na} mean": float(xa.mean()), f"{nb} mean": float(xb.mean()), f"{na} - {nb}": diff,
                     "std over seeds": per_seed[1], "p_value": p, "significant": bool(p < ALPHA)})
        verdicts.append(diff > 0 and p < ALPHA)
    if not rows:
        return c.untestable(f"needs a {c.title} evaluation with both {la} ({na}) and {lb} ({nb}) languages "
                            f"(column {column!r} of the report)")
    why = "; ".join(f"{r['system']}: {na} {r[f'{na} mean']:.1f} vs {nb} {r[f'{nb} mean']:.1f} "
                    f"({r[f'{na} - {nb}']:+.1f}, one-sided p={r['p_value']:.3f})" for r in rows)
    fewest = min(comb(r[f"{na} languages"] + r[f"{nb} languages"], r[f"{na} languages"]) for r in rows)
    if 1 / fewest > ALPHA:
        why += (f"; with so few languages no arrangement of the labels is rarer than 1 in {fewest}, so the "
                f"permutation test cannot reach p < {ALPHA}")
    left_out = f" ({', '.join(sorted(skip))}, the pivot language, left out)" if skip else ""
    return c.finding(HOLDS if all(verdicts) else FAILS, why,
                     f"mean accuracy over {na} languages{left_out} minus over {nb} languages, per system; languages "
                     "differ between the groups, so the test is a seeded permutation test of the language labels, "
                     f"one-sided ({na} higher); {VERDICT_RULE}: every system", rows)


def _group_diff(run: Any, bench: str, in_a: list[str], in_b: list[str]) -> float | None:
    if bench not in run.results:
        return None
    df = run.results[bench].per_language
    acc = dict(zip(df["language"], df["accuracy"], strict=True))
    return float(np.mean([acc[x] for x in in_a]) - np.mean([acc[x] for x in in_b]))


CHECKS = {
    "family_best_on_levels": check_family_best_on_levels,
    "family_most_above": check_family_most_above,
    "family_most_at_or_above": check_family_most_at_or_above,
    "translate_train_all_beats_zero_shot": check_translate_train_all_beats_zero_shot,
    "translate_test_beats_in_language_llm": check_translate_test_beats_in_language_llm,
    "higher_where_column_is": check_higher_where_column_is,
    "rank_changes_per_language": check_rank_changes_per_language,
    "human_above_machine_same_language": check_human_above_machine_same_language,
}


# --- all -----------------------------------------------------------------------------------------------


def evaluated_kinds(runs: list[Any]) -> list[str]:
    """The benchmark kinds the runs evaluated, in order of first appearance."""
    return list(dict.fromkeys(r.results[name].kind for r in runs for name in sorted(r.results)))


def check_findings(runs: list[Any], samples: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """Every finding the definitions of the benchmarks ``runs`` evaluated declare (RunInfo objects of
    :mod:`xlt.reporting.run_tables`), as dicts; a claim naming an unknown check kind is a :class:`ConfigError`."""
    groups = seed_groups(runs)
    systems = make_systems(groups)
    findings = []
    _ROWS.clear()
    _SCORES.clear()
    try:
        for kind in evaluated_kinds(runs):
            bench = get_benchmark(kind)
            for claim in bench.findings:
                if claim.check not in CHECKS:
                    raise ConfigError(f"{kind}: finding {claim.id!r} names the unknown check kind {claim.check!r}; "
                                      f"known: {sorted(CHECKS)}")
                findings.append(CHECKS[claim.check](Check(systems, groups, bench, claim, samples, seed)))
    finally:
        _ROWS.clear()
        _SCORES.clear()
    return [f.to_dict() for f in findings]


def add_findings(runs: list[Any], payload: dict[str, Any], samples: int = 1000, seed: int = 0) -> str:
    """Check the findings on ``runs``, store them (and the systems) in the comparison ``payload``;
    return the Markdown section."""
    payload["systems"] = systems_table(runs)
    payload["findings"] = check_findings(runs, samples, seed)
    return findings_markdown(payload["findings"], payload["systems"])


def systems_table(runs: list[Any]) -> list[dict[str, Any]]:
    """What each system is, as the findings read it from the configs."""
    return [{"system": s.label, "model": ", ".join(scored_model_names(s.runs[0].config)), "family": s.family or "other",
             "size": s.size or "?", "setting": s.setting, "seeds": ",".join(str(r.seed) for r in s.runs),
             "runs": ", ".join(r.label for r in s.runs)}
            for s in make_systems(seed_groups(runs))]


def findings_markdown(findings: list[dict[str, Any]], systems: list[dict[str, Any]]) -> str:
    import pandas as pd

    out = ["\n## Findings of the papers\n",
           "\nSystems as the checks read them from each run's config (model, setting; seeds grouped):\n\n",
           markdown_table(pd.DataFrame(systems)), "\n",
           md_table(["finding", "paper", "the paper says", "verdict", "why", "test"],
                    [[f["claim"], f["paper"], f.get("paper_says", ""), f"**{f['verdict']}**", f["why"], f["test"]]
                     for f in findings])]
    for f in findings:
        if f["numbers"]:
            out += [f"\n### {f['claim']}: {f['verdict']}\n\n"]
            if f.get("paper_says"):
                out.append(f"The paper: {f['paper_says']}\n\n")
            if f.get("needs"):
                out.append(f"Needs: {f['needs']}.\n\n")
            out += [f"Test: {f['test']}.\n\n", markdown_table(pd.DataFrame(f["numbers"]), digits=3)]
    return "".join(out)
