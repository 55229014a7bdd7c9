"""Check kind on groups of languages: is accuracy higher where a language column has one value than another."""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np

from xlt.reporting.checks.base import FAILS, HOLDS, UNTESTABLE, Check, Finding, check_kind
from xlt.reporting.paired import VERDICT_RULE, seed_stat
from xlt.reporting.systems import direct_benchmark, language_attr, language_means
from xlt.reporting.verdicts import ALPHA, UNTESTED_PART, group_permutation_test, untestable_parts


@check_kind("higher_where_column_is")
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
        per_seed = seed_stat(s, lambda r, bench=bench, in_a=in_a, in_b=in_b: _group_diff(r, bench, in_a, in_b))
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
    untested = untestable_parts({r["system"]: r["p_value"] for r in rows})
    if untested:
        why = UNTESTED_PART.format(parts=", ".join(untested)) + f"; {why}"
    return c.finding(UNTESTABLE if untested else HOLDS if all(verdicts) else FAILS, why,
                     f"mean accuracy over {na} languages{left_out} minus over {nb} languages, per system; languages "
                     "differ between the groups, so the test is a seeded permutation test of the language labels, "
                     f"one-sided ({na} higher); {VERDICT_RULE}: every system", rows)


def _group_diff(run: Any, bench: str, in_a: list[str], in_b: list[str]) -> float | None:
    if bench not in run.results:
        return None
    df = run.results[bench].per_language
    acc = dict(zip(df["language"], df["accuracy"], strict=True))
    return float(np.mean([acc[x] for x in in_a]) - np.mean([acc[x] for x in in_b]))
