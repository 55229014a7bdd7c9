"""Check kind on tokenizers: do accuracy differences between two systems follow their tokenization premiums across languages (the vocabulary claim tested on the vocabularies themselves)."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from xlt.metrics import permutation_p_value
from xlt.reporting.checks.base import FAILS, HOLDS, Check, Finding, check_kind
from xlt.reporting.paired import VERDICT_RULE
from xlt.reporting.systems import System, direct_benchmark, language_attr, language_means
from xlt.reporting.verdicts import ALPHA, all_significant


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN when either side is constant."""
    rx, ry = pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy()
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def spearman_permutation_test(
    x: np.ndarray, y: np.ndarray, samples: int, seed: int, alternative: str = "less"
) -> tuple[float, float]:
    """Spearman's rho of ``x`` and ``y`` and its permutation p-value: the null pairs each ``x`` with a
    ``y`` drawn at random without replacement (the languages exchangeable), vectorised over ``samples``
    shuffles; ``less``: a negative correlation is the effect."""
    rho = spearman(x, y)
    if rho != rho:
        return rho, float("nan")
    rx = pd.Series(x).rank().to_numpy()
    ry = pd.Series(y).rank().to_numpy()
    rx, ry = rx - rx.mean(), ry - ry.mean()
    rng = np.random.default_rng(seed)
    perm = rng.permuted(np.broadcast_to(ry, (samples, ry.size)), axis=1)
    null = perm @ rx / (np.sqrt((rx**2).sum()) * np.sqrt((ry**2).sum()))
    return rho, permutation_p_value(null, rho, alternative)


def _pairs(c: Check, measure: str) -> tuple[list[tuple[System, str, System, str]], str]:
    """The pairs of systems compared: in-language results of the benchmark with the tokenizer measure, the
    same setting and size (where known), different tokenizers (a pair with one tokenizer has no premium
    difference to follow)."""
    have = []
    for s in c.systems:
        bench = direct_benchmark(s, c.bench.kind)
        if bench is not None and language_means(s, bench, measure):
            have.append((s, bench))
    if len(have) < 2:
        return [], (
            f"needs two systems evaluated in-language on {c.title} whose results carry tokenizer measures "
            f"(xlt records them at evaluation; results written before it have none: rerun the evaluate stage with "
            f"force=true); found {len(have)}"
        )
    pairs = []
    for (a, ba), (b, bb) in combinations(have, 2):
        if a.setting != b.setting or (a.size and b.size and a.size != b.size):
            continue  # another setting or size would confound the vocabulary with the training or the model
        if _tokenizer_id(a, ba) == _tokenizer_id(b, bb):
            continue
        pairs.append((a, ba, b, bb))
    if not pairs:
        return [], (
            "needs two systems of the same setting and size with different tokenizers (systems sharing a "
            "vocabulary, e.g. XLM-R and InfoXLM, have no premium difference to follow)"
        )
    return pairs, ""


def _tokenizer_id(s: System, bench: str) -> Any:
    """The system's tokenizer: its recorded fingerprint, else its premiums (the same tokenizer gives the same)."""
    df = s.runs[0].results[bench].per_language
    if "tokenizer_fingerprint" in df and df["tokenizer_fingerprint"].notna().any():
        return str(df["tokenizer_fingerprint"].dropna().iloc[0])
    return tuple(np.round(df.sort_values("language")["premium"].to_numpy(dtype=float), 9))


@check_kind("accuracy_follows_tokenizer")
def check_accuracy_follows_tokenizer(c: Check) -> Finding:
    measure = c.param("measure", "premium")
    column, level = c.param("column", "resource"), str(c.param("level", "low")).lower()
    need = int(c.param("min_languages", 5))
    pairs, why_not = _pairs(c, measure)
    if not pairs:
        return c.untestable(why_not)
    rows, tested, p_values, whys, skipped = [], [], [], [], []
    for a, ba, b, bb in pairs:
        acc_a, acc_b = language_means(a, ba), language_means(b, bb)
        m_a, m_b = language_means(a, ba, measure), language_means(b, bb, measure)
        lev = {k: v.lower() for k, v in language_attr(a, ba, column).items()}
        langs = sorted(x for x in set(acc_a) & set(acc_b) & set(m_a) & set(m_b) if lev.get(x) == level)
        if len(langs) < need:
            skipped.append(
                f"{a.label} vs {b.label}: {len(langs)} {level}-resource language(s) with both measures"
            )
            continue
        d_m = np.array([m_a[x] - m_b[x] for x in langs])
        d_acc = np.array([acc_a[x] - acc_b[x] for x in langs])
        rho, p = spearman_permutation_test(d_m, d_acc, c.samples, c.seed, "less")
        if rho != rho:
            skipped.append(
                f"{a.label} vs {b.label}: the {measure} differences (or accuracy differences) are "
                "the same on every language, so there is no order to follow"
            )
            continue
        agree = sum(
            np.sign(dm) == -np.sign(da) and dm != 0 and da != 0 for dm, da in zip(d_m, d_acc, strict=True)
        )
        differ = int(sum((d_m != 0) & (d_acc != 0)))
        for x, dm, da in zip(langs, d_m, d_acc, strict=True):
            rows.append(
                {
                    "pair": f"{a.label} vs {b.label}",
                    "language": x,
                    f"{measure} {a.label}": m_a[x],
                    f"{measure} {b.label}": m_b[x],
                    f"{measure} difference": float(dm),
                    "accuracy difference": float(da),
                    "lower-premium system higher": bool(dm != 0 and da != 0 and np.sign(dm) == -np.sign(da)),
                }
            )
        rows.append(
            {
                "pair": f"{a.label} vs {b.label}",
                "language": f"{len(langs)} {level}-resource languages",
                "spearman rho": rho,
                "p (one-sided, rho < 0)": p,
                "significant": bool(p < ALPHA),
                "lower-premium system higher": f"{agree} of {differ}",
            }
        )
        tested.append((a, b, rho, p))
        p_values.append(p)
        whys.append(
            f"{a.label} vs {b.label}: on {agree} of {differ} {level}-resource languages the system with the "
            f"lower {measure} scores higher; Spearman rho of the {measure} and accuracy differences over "
            f"{len(langs)} languages {rho:+.2f} (one-sided permutation p={p:.3f})"
        )
    if not tested:
        return c.untestable(
            f"needs at least {need} {level}-resource languages ({c.bench.report.label(column)} "
            f"{level!r}) with accuracy and {measure} from both systems of a pair; " + "; ".join(skipped)
        )
    ok = all(rho < 0 for _, _, rho, _ in tested) and all_significant(p_values)
    why = (
        "tested directly, on the tokenizers' measures (not the model-family proxy belebele_xlmv_best_lowest): "
        + "; ".join(whys)
    )
    if skipped:
        why += "; not tested: " + "; ".join(skipped)
    test = (
        f"per pair of systems of the same setting and size with different tokenizers, over the {level}-resource languages "
        f"({c.bench.report.label(column)} {level!r}, at least {need}) both evaluated: Spearman's rank correlation "
        f"of the per-language differences in tokenization {measure} (tokens on the parallel items / English's, "
        "the scored model's tokenizer, no special tokens) and in accuracy (mean over seeds); significance: "
        "permutation test pairing the accuracy differences with the languages at random, one-sided (a lower "
        f"{measure} goes with a higher accuracy, rho < 0); {VERDICT_RULE}: every pair"
    )
    return c.finding(HOLDS if ok else FAILS, why, test, rows)
