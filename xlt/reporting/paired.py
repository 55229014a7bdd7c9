"""The questions two systems both answered, and the paired test over them that the findings' checks use.

Comparisons on the same questions use :func:`paired_test`: each question's score is the mean over a
system's seeds, the interval comes from a bootstrap resampling the questions once and the p-value from a
paired permutation test (seeds are not extra questions: pooling them would shrink p-values k-fold). The
prediction rows are read once per :func:`xlt.reporting.findings.check_findings` call (:data:`_ROWS`,
cleared by it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xlt.metrics import bootstrap_mean_diff
from xlt.reporting.systems import System
from xlt.reporting.verdicts import ALPHA
from xlt.run.layout import RunDir
from xlt.run.results import item_correct, read_predictions

_ROWS: dict[tuple[str, str, str], list[dict[str, Any]]] = {}


def run_predictions(run: Any, benchmark: str, lang: str) -> list[dict[str, Any]]:
    """The run's prediction rows of one language (read once per :func:`check_findings` call)."""
    key = (str(run.path), benchmark, lang)
    if key not in _ROWS:
        _ROWS[key] = read_predictions(RunDir(run.path), benchmark, lang)
    return _ROWS[key]


def _correct(run: Any, benchmark: str, lang: str) -> dict[str, float]:
    """Per question id, whether the run answered it right (1/0; an LLM result over several few-shot draws: the
    share of its draws that did, :func:`xlt.run.results.item_correct`)."""
    return {str(p["id"]): item_correct(p) for p in run_predictions(run, benchmark, lang)}


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


def seed_stat(system: System, fn) -> tuple[float, float]:
    """Mean and standard deviation over the system's seeds of ``fn(run)`` (runs where it is None left out)."""
    vals = [fn(r) for r in system.runs]
    vals = [v for v in vals if v is not None]
    if not vals:
        return float("nan"), float("nan")
    return float(np.mean(vals)), float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0


def fmt_test(t: dict[str, Any]) -> str:
    """A :func:`paired_test` result in words (the findings' ``why``)."""
    side = "" if t.get("alternative", "two-sided") == "two-sided" else "one-sided "
    return (f"diff {t['diff']:+.1f} points [{t['ci_low']:+.1f}, {t['ci_high']:+.1f}], {side}p={t['p_value']:.3f} "
            f"({'significant' if t['significant'] else 'not significant'} at {ALPHA}; {t['questions']} paired "
            f"questions{'' if t['seeds'] == '1 vs 1' else ', seeds ' + t['seeds'] + ' averaged per question'})")


PAIRED_TEST = ("paired comparison over questions: each question's score is the mean over a system's seeds; 95% "
               "percentile interval from a bootstrap resampling the questions once, p-value from a paired "
               "permutation test (each question's two scores swapped at random, B draws)")
VERDICT_RULE = (f"the verdict holds only when the test is significant at alpha={ALPHA} in the paper's direction "
                "(one-sided); a claim with several parts needs every part significant (intersection-union test)")


def clear_cache() -> None:
    """Forget the prediction rows and per-question scores read so far (one :func:`check_findings` call)."""
    _ROWS.clear()
    _SCORES.clear()
