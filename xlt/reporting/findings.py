"""Findings of the benchmarks' papers, checked on the runs of a comparison (``python -m xlt.report --compare``).

A benchmark's definition declares its paper's claims as data (``report = Report(claims=...)``:
:class:`~xlt.data.benchmarks.declarations.Claim` objects). :func:`check_findings` runs the claims of every
benchmark kind the compared runs evaluated, each by the check kind it names (registered where it is
defined, :mod:`xlt.reporting.checks`), on the systems the runs are (:mod:`xlt.reporting.systems`); this
module also renders the verdict table (:func:`findings_markdown`). Each check returns a
:class:`~xlt.reporting.checks.Finding` (id ``<finding_prefix>_<claim id>``): the claim, a verdict
(``holds`` / ``does not hold`` / ``cannot be tested``), why, the numbers and the test behind it. No shared
language or question is "cannot be tested", with the reason, never a verdict on NaN.

**Verdicts are decided by tests** (:mod:`xlt.reporting.verdicts`): a finding *holds* only when its test is
significant at ``ALPHA`` (0.05), one-sided in the paper's direction, with the null hypothesis the design
implies; a claim with several parts needs every part significant (intersection-union). The effect, its
interval and the p-value are reported beside the verdict; per-language tests are given raw and
Holm-corrected. tests/reporting/test_calibration.py checks every finding's rate of "holds" on simulated
equal systems and its power (docs/findings.md). Each finding carries the paper's sentence it checks
(``paper_says``: quoted when it is the paper's text, else marked as a paraphrase, with where it comes from)
and what it needs (``needs``).
"""

from __future__ import annotations

from typing import Any

from xlt.data.benchmarks import get_benchmark
from xlt.errors import ConfigError
from xlt.markdown import markdown_table
from xlt.reporting import paired
from xlt.reporting.checks import CHECKS, Check
from xlt.reporting.render import frame_markdown
from xlt.reporting.run_tables import seed_groups
from xlt.reporting.systems import make_systems, systems_table


def evaluated_kinds(runs: list[Any]) -> list[str]:
    """The benchmark kinds the runs evaluated, in order of first appearance."""
    return list(dict.fromkeys(r.results[name].kind for r in runs for name in sorted(r.results)))


def check_findings(runs: list[Any], samples: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """Every finding the definitions of the benchmarks ``runs`` evaluated declare (RunInfo objects of
    :mod:`xlt.reporting.run_tables`), as dicts; a claim naming an unknown check kind is a :class:`ConfigError`."""
    groups = seed_groups(runs)
    systems = make_systems(groups)
    findings = []
    paired.clear_cache()
    try:
        for kind in evaluated_kinds(runs):
            bench = get_benchmark(kind)
            for claim in bench.report.claims:
                if claim.check not in CHECKS:
                    raise ConfigError(f"{kind}: finding {claim.id!r} names the unknown check kind {claim.check!r}; "
                                      f"known: {sorted(CHECKS)}")
                findings.append(CHECKS[claim.check](Check(systems, groups, bench, claim, samples, seed)))
    finally:
        paired.clear_cache()
    return [f.to_dict() for f in findings]


def add_findings(runs: list[Any], payload: dict[str, Any], samples: int = 1000, seed: int = 0) -> str:
    """Check the findings on ``runs``, store them (and the systems) in the comparison ``payload``;
    return the Markdown section."""
    payload["systems"] = systems_table(runs)
    payload["findings"] = check_findings(runs, samples, seed)
    return findings_markdown(payload["findings"], payload["systems"])


def findings_markdown(findings: list[dict[str, Any]], systems: list[dict[str, Any]]) -> str:
    import pandas as pd

    out = ["\n## Findings of the papers\n",
           "\nSystems as the checks read them from each run's config (model, setting; seeds grouped):\n\n",
           frame_markdown(pd.DataFrame(systems)), "\n",
           markdown_table(["finding", "paper", "the paper says", "verdict", "why", "test"],
                    [[f["claim"], f["paper"], f.get("paper_says", ""), f"**{f['verdict']}**", f["why"], f["test"]]
                     for f in findings])]
    for f in findings:
        if f["numbers"]:
            out += [f"\n### {f['claim']}: {f['verdict']}\n\n"]
            if f.get("paper_says"):
                out.append(f"The paper: {f['paper_says']}\n\n")
            if f.get("needs"):
                out.append(f"Needs: {f['needs']}.\n\n")
            out += [f"Test: {f['test']}.\n\n", frame_markdown(pd.DataFrame(f["numbers"]), digits=3)]
    return "".join(out)
