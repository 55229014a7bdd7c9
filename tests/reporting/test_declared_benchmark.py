"""A benchmark the reporting layer has never heard of appears in every report by its definition alone.

The toy benchmark below is defined here and registered for these tests only: two options per item
(chance 50), no subsets, its own grouping column (``region``) and its own claims. Fake finished runs
(:mod:`tests.reporting.fake_runs`) go through the report writer, the plots, ``report --compare`` and the
findings check; each shows the toy benchmark with its grouping, its chance level and its claims'
verdicts, and nothing of another benchmark's.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pandas as pd
import pytest
from datasets import Dataset

from tests.reporting.fake_runs import MODELS, TTA, write_run
from xlt import config as xcfg
from xlt.data.benchmarks import BENCHMARKS
from xlt.data.benchmarks.base import Benchmark, Claim, Report
from xlt.errors import ConfigError
from xlt.reporting.checks import FAILS, HOLDS, UNTESTABLE
from xlt.reporting.compare_runs import compare_runs
from xlt.reporting.findings import check_findings
from xlt.reporting.html import compare_page, run_page
from xlt.reporting.run_report import write_report
from xlt.reporting.run_tables import RunInfo
from xlt.reporting.tables import load_run_results, per_language_frame
from xlt.run.layout import RunDir

KIND = "toy_pairs"
# tox is in no language table: its name and script read as its code and n/a.
REGIONS = {"deu_Latn": "north", "fin_Latn": "north", "swh_Latn": "south", "yor_Latn": "south", "tox": "south"}


class PairsBenchmark(Benchmark):
    """Two-option items (a premise and which of two sentences follows), no passage, grouped by region."""

    kind = KIND
    has_passage = False
    paper = "Toy pairs (tests, 2026)"
    report = Report(title="Toy-Pairs", language_groupings=("region",), thresholds=(60.0,),
                    labels={"region": "world region"}, claims=(
        Claim("higher_where_column_is", "north_above_south", "accuracy is higher on northern than on southern languages",
              {"column": "region", "a": "north", "b": "south", "a_label": "northern", "b_label": "southern"}),
        Claim("higher_where_column_is", "south_above_north", "accuracy is higher on southern than on northern languages",
              {"column": "region", "a": "south", "b": "north"}),
        Claim("translate_train_all_beats_zero_shot", "tta_beats_zero_shot", "translate-train-all beats zero-shot (toy)"),
        Claim("family_most_at_or_above", "infoxlm_most_ge_60", "InfoXLM has the most languages at or above 60%",
              {"families": ("XLM-R", "XLM-V", "InfoXLM"), "family": "InfoXLM", "threshold": 60}),
    ))

    def language_info(self, code: str, groups: dict[str, str] | None = None) -> dict[str, Any]:
        return {**super().language_info(code, groups), "region": REGIONS.get(code, "n/a")}

    def languages(self, bcfg: Any) -> list[str]:
        return sorted(REGIONS)

    def load_all(self, bcfg: Any, language: str, split: str = "test") -> tuple[Dataset, str]:
        rows = {"id": ["p0", "p1"], "language": [language] * 2, "passage": ["", ""],
                "question": ["The man fell. What was the effect?", "It rained. What was the cause?"],
                "options": [["He got hurt.", "He laughed."], ["Clouds came.", "The sun shone."]], "label": [0, 0]}
        # Types inferred: EVAL_FEATURES fixes 4 options on this branch (options-as-data lifts that).
        return Dataset.from_dict(rows), f"toy[{language}]"


def accs(north: float, south: float) -> dict[str, Any]:
    return {"kind": KIND, "n_options": 2,
            "accuracies": {c: (north if r == "north" else south) + i for i, (c, r) in enumerate(REGIONS.items())}}


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy benchmark registered; three runs (XLM-R zero-shot, XLM-R translate-train-all, XLM-V), reported
    and compared; every axhline the plots draw recorded."""
    import matplotlib.axes

    root = tmp_path_factory.mktemp("toy")
    lines: list[float] = []
    draw = matplotlib.axes.Axes.axhline
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(BENCHMARKS, KIND, PairsBenchmark())
        mp.setattr(matplotlib.axes.Axes, "axhline", lambda ax, y=0, *a, **k: lines.append(y) or draw(ax, y, *a, **k))
        runs = [write_run(root / "zs" / "default", MODELS["XLM-R"], 1, others={"pairs": accs(70, 50)}, n=20),
                write_run(root / "tta" / "default", MODELS["XLM-R"], 1, translate=TTA, others={"pairs": accs(85, 60)}, n=20),
                write_run(root / "v" / "default", MODELS["XLM-V"], 1, others={"pairs": accs(75, 55)}, n=20)]
        cfg = xcfg.validate({"recipe_name": "toy"})
        results = load_run_results(runs[0])
        write_report(cfg.eval, cfg.model, RunDir(runs[0]), results, None, recipe_name=cfg.recipe_name, seed=cfg.seed)
        payload = compare_runs(runs, root / "cmp", samples=100)
        yield {"runs": runs, "cfg": cfg, "results": results, "payload": payload, "cmp": root / "cmp", "lines": lines}


def test_report_files_show_the_declared_grouping_and_chance(toy):
    run = toy["runs"][0]
    rep = json.loads((run / "report.json").read_text())
    assert list(rep["benchmarks"]) == ["pairs"]
    s = rep["benchmarks"]["pairs"]["summary"]
    # zs: north deu 70, fin 71; south swh 52, yor 53, tox 54 (20 items each: multiples of 5 after rounding)
    assert s["chance"] == 50.0 and s["n_languages"] == 5 and s["n_ge_60"] == 2
    assert set(s["by_region"]) == {"north", "south"} and s["by_region"]["north"]["n_languages"] == 2
    assert s["by_region"]["north"]["mean"] > s["by_region"]["south"]["mean"]
    assert not {"full", "resource_taxonomy", "by_script", "n_ge_50"} & set(s)  # nothing the toy did not declare
    md = (run / "report.md").read_text()
    assert "## Toy-Pairs (pairs)" in md and "### by world region" in md and "| languages >= 60 |" in md
    assert "| tox | tox | south |" in md  # the per-language table: code, name, the declared grouping
    assert "Resource levels" not in md and "acc_" not in md
    csv = pd.read_csv(run / "report.csv")
    assert set(csv["chance"]) == {50.0} and set(csv["region"]) == {"north", "south"}
    assert "pairs: by world region" in (run / "report.tex").read_text()
    assert sorted(p.name for p in (run / "plots").glob("*.png")) == ["pairs_by_region.png", "pairs_per_language.png"]


def test_plots_and_pages_draw_chance_from_the_results(toy):
    assert toy["lines"] and set(toy["lines"]) == {50.0}  # per language, by region, compare: all at 50, none at 25
    cfg = toy["cfg"]
    page = run_page(cfg.eval, cfg.model, toy["results"], None, recipe_name=cfg.recipe_name, seed=cfg.seed)
    blocks = page["sections"][1]["blocks"]
    cards = dict(blocks[0]["rows"])
    assert cards["chance"] == "50.0" and cards["languages >= 60"] == "2"
    bar_blocks = [b for b in blocks if b["type"] == "bars"]
    assert [b["id"] for b in bar_blocks] == ["pairs-bars", "pairs-groups"] and {b["chance"] for b in bar_blocks} == {50.0}
    assert len(bar_blocks[0]["series"]) == 1  # no subsets: one series
    assert bar_blocks[1]["series"][0]["name"] == "by world region"
    langs = next(b for b in blocks if b.get("id") == "pairs-langs")
    assert {c["key"] for c in langs["columns"] if c.get("filter")} == {"script", "family", "region"}
    html = (toy["runs"][0] / "report.html").read_text()
    assert "world region" in html


def test_compare_has_the_toy_benchmark_without_rankings(toy):
    payload, out = toy["payload"], toy["cmp"]
    entry = payload["benchmarks"]["pairs"]
    assert entry["chance"] == 50.0 and entry["kind"] == KIND and "rankings" not in entry
    md = (out / "compare.md").read_text()
    assert "## Toy-Pairs (pairs)" in md and "rankings on" not in md
    assert (out / "pairs_compare.png").is_file() and not list(out.glob("*rankings*"))
    page = compare_page([RunInfo(p) for p in toy["runs"]], payload)
    section = next(s for s in page["sections"] if s["title"] == "Toy-Pairs (pairs)")
    sbs = next(b for b in section["blocks"] if b.get("id") == "pairs-sbs")
    assert [c["key"] for c in sbs["columns"][:5]] == ["name", "language", "script", "family", "region"]
    assert {r["language"]: r["region"] for r in sbs["rows"]} == REGIONS
    assert next(b for b in section["blocks"] if b.get("id") == "pairs-accbars")["chance"] == 50.0
    assert "pairs-ranks" not in {b.get("id") for b in section["blocks"]}


def test_findings_are_the_declared_claims(toy):
    f = {x["id"]: x for x in toy["payload"]["findings"]}
    assert list(f) == ["toy_pairs_north_above_south", "toy_pairs_south_above_north", "toy_pairs_tta_beats_zero_shot",
                       "toy_pairs_infoxlm_most_ge_60"]  # only the toy's: no other benchmark was evaluated
    assert {x["paper"] for x in f.values()} == {"Toy pairs (tests, 2026)"}
    north = f["toy_pairs_north_above_south"]
    # 2 northern and 3 southern languages: north is higher by 15 points and more, but a permutation of the
    # language labels cannot reach p < 0.05 (at best 1 in 10): the verdict, decided by the test, says so
    assert north["verdict"] == FAILS and len(north["numbers"]) == 3 and "1 in 10" in north["why"]
    assert all(r["north languages"] == 2 and r["south languages"] == 3 and r["north - south"] > 15 for r in north["numbers"])
    assert all(r["p_value"] > 0.05 for r in north["numbers"])
    assert f["toy_pairs_south_above_north"]["verdict"] == FAILS
    tta = f["toy_pairs_tta_beats_zero_shot"]
    assert tta["verdict"] == HOLDS and tta["numbers"][0]["diff"] > 0 and tta["numbers"][0]["languages"] == 5
    assert f["toy_pairs_infoxlm_most_ge_60"]["verdict"] == UNTESTABLE
    assert "needs an XLM-R, an XLM-V and an InfoXLM system" in f["toy_pairs_infoxlm_most_ge_60"]["why"]
    md = (toy["cmp"] / "compare.md").read_text()
    assert any(ln.startswith("| translate-train-all beats zero-shot (toy) | Toy pairs (tests, 2026) |")
               and "| **holds** |" in ln for ln in md.splitlines())
    assert "toy_pairs_tta_beats_zero_shot" in (toy["cmp"] / "compare.html").read_text()


def test_a_claim_with_an_unknown_check_kind_is_a_clear_error(toy):
    bench = PairsBenchmark()
    bench.report = replace(bench.report, claims=(Claim("no_such_check", "x", "a claim no check kind tests"),))
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(BENCHMARKS, KIND, bench)
        runs = [RunInfo(p) for p in toy["runs"][:2]]
        with pytest.raises(ConfigError, match=r"toy_pairs: finding 'x' names the unknown check kind 'no_such_check'"):
            check_findings(runs, samples=10)


def test_a_result_without_a_chance_level_reads_as_four_options():
    bench = PairsBenchmark()
    row = {"benchmark": "pairs", "language": "deu_Latn", "accuracy": 50.0, "n": 2, "ci_low": 0.0, "ci_high": 100.0}
    df = per_language_frame([row, {**row, "language": "tox", "chance": 50.0}], None, bench)
    assert df["chance"].tolist() == [25.0, 50.0] and df["region"].tolist() == ["north", "south"]
    loaded = bench.load(type("Cfg", (), {"max_questions": None})(), "deu_Latn")  # a 2-option definition
    assert {len(o) for o in loaded["options"]} == {2}
