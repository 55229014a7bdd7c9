"""Report stage (merge, tables, plots) and the comparison of several runs, on fixtures."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from omegaconf import OmegaConf

from tests.fixtures.benchmarks import write_belebele, write_global_mmlu
from xlt import config as xcfg
from xlt.errors import DataError
from xlt.reporting.compare_runs import compare_runs
from xlt.run.layout import RunDir
from xlt.stages import call_stage

BELEBELE_LANGS = ["arb_Arab", "deu_Latn", "hin_Latn", "zho_Hans"]
GMMLU_LANGS = ["de", "sw", "zh"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    write_belebele(root / "belebele", BELEBELE_LANGS, n=8)
    write_global_mmlu(root / "gmmlu", GMMLU_LANGS, n=12)
    return root


def make_cfg(data, seed=42, **eval_kw):
    return xcfg.validate({"seed": seed, "eval": {"bootstrap_samples": 200, **eval_kw, "benchmarks": {
        "belebele": {"kind": "belebele", "path": str(data / "belebele")},
        "global_mmlu": {"kind": "global_mmlu", "path": str(data / "gmmlu")},
    }}})


def evaluate(data, path, config_seed=42, config_option=0, **eval_kw):
    """Evaluate with ``eval_kw``; record a config.yaml that differs from others only as asked."""
    run = RunDir(path)
    call_stage("evaluate", make_cfg(data, **eval_kw), run)
    recorded = make_cfg(data, seed=config_seed, fixed_option=config_option)
    (run.path / "config.yaml").write_text(OmegaConf.to_yaml(recorded))
    return run


def test_report_files_and_hand_computed_summaries(data, tmp_path):
    groups = tmp_path / "groups.tsv"
    groups.write_text("code\tgroup\narb_Arab\tlow\nde\thigh\nzho_Hans\thigh\n")
    cfg = make_cfg(data, scorer="fixed", fixed_option=2, resource_groups=str(groups))
    run = RunDir(tmp_path / "run")
    call_stage("evaluate", cfg, run)
    summary = call_stage("report", cfg, run)
    assert summary == {"belebele": {"mean_accuracy": 25.0, "n_languages": 4},
                       "global_mmlu": {"mean_accuracy": 25.0, "n_languages": 3}}
    for ext in ("md", "csv", "json", "tex", "html"):
        assert (run.path / f"report.{ext}").stat().st_size > 0
    rep = json.loads((run.path / "report.json").read_text())
    bb = rep["benchmarks"]["belebele"]["summary"]
    assert bb["n_ge_50"] == 0 and bb["by_script"]["Latn"] == {"mean": 25.0, "n_languages": 2}
    assert bb["by_resource"] == {"high": {"mean": 25.0, "n_languages": 2}, "low": {"mean": 25.0, "n_languages": 1},
                                 "n/a": {"mean": 25.0, "n_languages": 1}}
    gm = rep["benchmarks"]["global_mmlu"]["summary"]
    # fixed option 2 vs gold (3i+1)%4: right at i=3,7,11 -> full 25, CS 0 (i=0,4,8), CA 50 (3 of 6), MA 3/9
    assert gm["full"] == 25.0 and gm["CS"] == 0.0 and gm["CA"] == 50.0 and gm["MA"] == pytest.approx(100 / 3)
    assert gm["by_tier"]["high"]["n_languages"] == 2 and gm["by_tier"]["low"]["n_languages"] == 1
    assert set(gm["by_translation"]) == {"human"}
    assert gm["by_category"]["Medical"] == 50.0 and gm["by_category"]["STEM"] == 0.0
    csv = pd.read_csv(run.path / "report.csv")
    assert len(csv) == 7 and set(csv["benchmark"]) == {"belebele", "global_mmlu"}
    assert csv.loc[csv.language == "sw", "code"].item() == "swh_Latn"
    md = (run.path / "report.md").read_text()
    assert "| zho_Hans | Chinese (Simplified) | Hans | Sino-Tibetan | high | 25.0 |" in md
    assert "\\begin{tabular}" in (run.path / "report.tex").read_text()
    plots = sorted(p.name for p in (run.path / "plots").glob("*.png"))
    assert "belebele_per_language.png" in plots and "global_mmlu_cs_vs_ca.png" in plots
    assert "belebele_by_resource.png" in plots and "global_mmlu_by_tier.png" in plots


def test_report_errors_when_languages_missing(data, tmp_path):
    cfg = make_cfg(data, scorer="gold", num_shards=2, shard_index=0)
    run = RunDir(tmp_path / "run")
    assert call_stage("evaluate", cfg, run) is None
    with pytest.raises(DataError, match=r"missing: .*belebele: deu_Latn, zho_Hans.*shard"):
        call_stage("report", cfg, run)
    assert not (run.path / "report.md").exists()


def test_compare_runs(data, tmp_path):
    # system X: two seeds (gold, and fixed option 2); system Z: fixed option 1, one seed.
    x1 = evaluate(data, tmp_path / "x" / "seed1", config_seed=1, scorer="gold")
    x2 = evaluate(data, tmp_path / "x" / "seed2", config_seed=2, scorer="fixed", fixed_option=2)
    z = evaluate(data, tmp_path / "z" / "default", config_option=1, scorer="fixed", fixed_option=1)
    out = tmp_path / "cmp"
    payload = compare_runs([x1.path, x2.path, z.path], out, samples=300)
    bb = payload["benchmarks"]["belebele"]
    sbs = {row["language"]: row for row in bb["side_by_side"]}
    assert sbs["deu_Latn"] == {"language": "deu_Latn", "x/seed1": 100.0, "x/seed2": 25.0, "z/default": 25.0}
    diffs = [d for d in bb["differences"] if d["run"] == "z/default"]
    assert len(diffs) == 4 and all(d["diff"] == -75.0 and d["significant"] and d["n"] == 8 for d in diffs)
    seeds = {s["system"]: s for s in bb["seeds"]}
    xs = seeds["x/seed1 (+1 seeds)"]
    assert xs["runs"] == 2 and xs["seeds"] == "1,2" and xs["mean"] == 62.5 and xs["std"] == pytest.approx(53.033, abs=1e-3)
    assert seeds["z/default"]["mean"] == 25.0 and seeds["z/default"]["std"] == 0.0
    gm = payload["benchmarks"]["global_mmlu"]
    ranks = {r["system"]: r for r in gm["rankings"]}
    # X: CS (100+0)/2=50, CA (100+50)/2=75; Z (option 1 right at i=0,4,8: all CS): CS 100, CA 0.
    assert ranks["z/default"]["CS"] == 100.0 and ranks["z/default"]["CA"] == 0.0
    assert ranks["z/default"]["rank_CS"] == 1 and ranks["z/default"]["rank_CA"] == 2
    assert ranks["x/seed1 (+1 seeds)"]["rank_full"] == 1 and ranks["x/seed1 (+1 seeds)"]["shift_CS_to_CA"] == -1
    changes = {(c["from"], c["to"]): c for c in gm["rank_changes"]}
    assert changes[("CS", "CA")]["rank_changes"] == 2 and changes[("CS", "CA")]["mean_abs_position_shift"] == 1.0
    assert changes[("full", "MA")]["rank_changes"] == 0
    for name in ("compare.md", "compare.json", "compare.html", "belebele_side_by_side.csv", "global_mmlu_rankings.csv",
                 "belebele_compare.png"):
        assert (out / name).is_file(), name


@pytest.mark.slow  # over 10 s of full runs through the CLI: the slow tier, docs/testing.md
def test_compare_cli(data, tmp_path):
    a = evaluate(data, tmp_path / "a" / "default", scorer="gold")
    b = evaluate(data, tmp_path / "b" / "default", config_option=3, scorer="fixed", fixed_option=3)
    proc = subprocess.run([sys.executable, "-m", "xlt.report", "--compare", str(a.path), str(b.path),
                           "--out", str(tmp_path / "cmp"), "--bootstrap-samples", "50"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "a/default" in (tmp_path / "cmp" / "compare.md").read_text()
    assert "## Findings of the papers" in (tmp_path / "cmp" / "compare.md").read_text()
    assert (tmp_path / "cmp" / "compare.html").stat().st_size > 0
    bad = subprocess.run([sys.executable, "-m", "xlt.report", "--compare", str(a.path), str(tmp_path / "nope"),
                          "--out", str(tmp_path / "cmp2")], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "config.yaml" in bad.stderr


def test_seed_groups_ignore_keys_that_change_no_result(data, tmp_path):
    """Runs differing in seed and in neutral keys (logger, run_root, shard settings) are one system;
    a result-changing key (the training learning rate) splits them."""
    a, b, c = (evaluate(data, tmp_path / "s" / name, config_seed=seed, scorer="gold")
               for name, seed in (("a", 1), ("b", 2), ("c", 3)))
    for run, extra in ((b, {"logger": {"kind": "wandb", "project": "p"}, "run_root": "/elsewhere",
                            "eval": {"num_shards": 4, "shard_index": 3}, "translate": {"cache_dir": "/c"}}),
                       (c, {"training": {"learning_rate": 1.0}})):
        recorded = OmegaConf.merge(OmegaConf.load(run.path / "config.yaml"), extra)
        (run.path / "config.yaml").write_text(OmegaConf.to_yaml(recorded))
    out = compare_runs([a.path, b.path, c.path], tmp_path / "cmp", samples=50)
    systems = {s["system"]: s for s in out["benchmarks"]["belebele"]["seeds"]}
    assert systems["s/a (+1 seeds)"]["seeds"] == "1,2"
    assert systems["s/c"]["runs"] == 1


def test_report_says_which_llm_results_are_not_comparable_with_the_harness():
    from xlt.data.benchmarks import get_benchmark
    from xlt.reporting.run_report import comparability_line
    from xlt.reporting.tables import per_language_frame

    gm = get_benchmark("global_mmlu")

    def result(lang, comparable, reasons=()):
        return {"benchmark": "global_mmlu", "language": lang, "accuracy": 50.0, "n": 4, "ci_low": 0.0, "ci_high": 100.0,
                "scorer_meta": {"comparable_to_harness": comparable, "not_comparable_because": list(reasons)}}

    capped = per_language_frame([result("de", True), result("en", False, ["capped run not comparable: --limit 4"])], None, gm)
    line = comparability_line(capped)
    assert "Not comparable with lm-evaluation-harness numbers** (1 language(s): en)" in line and "--limit 4" in line
    assert "every language" in comparability_line(per_language_frame([result("de", True)], None, gm))
    encoder = per_language_frame([{k: v for k, v in result("de", True).items() if k != "scorer_meta"}], None, gm)
    assert comparability_line(encoder) == ""
