"""The cross-language item report (xlt/reporting/items.py) on constructed runs with one planted answer-key
error, the tokenizer measures side by side in ``report --compare``, and the vocabulary finding
(xlt/reporting/checks/vocabulary.py) on runs whose results carry tokenizer premiums."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.reporting.fake_runs import MODELS, write_item_runs, write_run
from xlt import languages as langtab
from xlt.reporting.checks import FAILS, HOLDS, UNTESTABLE
from xlt.reporting.checks.vocabulary import spearman, spearman_permutation_test
from xlt.reporting.compare_runs import compare_runs
from xlt.reporting.findings import check_findings
from xlt.reporting.items import item_report, suspects, system_scores, text_direction
from xlt.reporting.run_tables import RunInfo
from xlt.reporting.tables import load_run_results

PLANTED = ("https://x.example/p7#1", "arb_Arab")


@pytest.fixture(scope="module")
def item_cmp(tmp_path_factory):
    root = tmp_path_factory.mktemp("items")
    paths, data = write_item_runs(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("xlt.reporting.compare_runs.comparison_plot", lambda *a, **k: None)
        payload = compare_runs(paths, root / "cmp", samples=50)
    return {"paths": paths, "payload": payload, "out": root / "cmp"}


def test_the_planted_answer_key_error_comes_out_first(item_cmp):
    report = item_cmp["payload"]["benchmarks"]["belebele"]["item_report"]
    first = report["suspects"][0]
    assert (first["item"], first["language"]) == PLANTED
    assert first["weakest share right elsewhere"] == 1.0 and first["other languages"] == 6
    # the weaker suspects (the hard item, wrong in two languages) follow, with a lower share
    rest = {(s["item"], s["language"]) for s in report["suspects"][1:]}
    assert rest == {("https://x.example/p3#1", "deu_Latn"), ("https://x.example/p3#1", "fra_Latn")}
    assert all(s["weakest share right elsewhere"] < 1.0 for s in report["suspects"][1:])
    # both languages' texts, the reference one English (right for every system), RTL marked
    texts = first["texts"]
    assert [t["language"] for t in texts] == ["arb_Arab", "eng_Latn"] and [t["dir"] for t in texts] == [
        "rtl",
        "ltr",
    ]
    assert texts[0]["gold"] == 0 and texts[1]["gold"] == 3  # the swapped label: 7 % 4 = 3 in every other file
    # every system picked option 4 in Arabic: the answer every other language's file keys
    assert set(map(tuple, first["picks"].values())) == {(3,)} and len(first["picks"]) == 3
    assert all(p.endswith(": option 4") for p in texts[0]["picked"])
    md = (item_cmp["out"] / "compare.md").read_text()
    assert "items that break in one language" in md and md.index("p7#1") < md.index("p3#1")
    counts = (item_cmp["out"] / "belebele_items.csv").read_text().splitlines()
    assert counts[0].startswith("item,") and len(counts) == 21


def test_a_stricter_share_leaves_only_the_planted_error(item_cmp):
    runs = [RunInfo(p) for p in item_cmp["paths"]]
    systems = {r.label: system_scores([r], "belebele") for r in runs}
    assert [(s["item"], s["language"]) for s in suspects(systems, share=0.9)] == [PLANTED]
    # one system alone (a single run's report) finds it among its strongest suspects, beside its own scattered
    # misses: only several systems together tell a translation error from a model's
    one = item_report({"this run": systems[runs[0].label]}, "eng_Latn", None)
    top = {(s["item"], s["language"]) for s in one["suspects"] if s["weakest share right elsewhere"] == 1.0}
    assert PLANTED in top and len(top) < len(one["suspects"]) + 1
    assert one["texts_missing"] and "texts" not in one["suspects"][0]


def test_text_direction_from_the_script():
    assert [
        text_direction(c) for c in ("arb_Arab", "heb_Hebr", "urd_Arab", "eng_Latn", "zho_Hans", "ar")
    ] == ["rtl", "rtl", "rtl", "ltr", "ltr", "rtl"]


def test_the_item_report_runs_in_a_single_runs_report(item_cmp, tmp_path):
    from xlt import config as xcfg
    from xlt.reporting.run_report import run_items
    from xlt.run.layout import RunDir

    path = item_cmp["paths"][0]
    cfg = xcfg.validate(json.loads(json.dumps(RunInfo(path).config)))
    items = run_items(cfg.eval, RunDir(path), load_run_results(path))
    found = {(s["item"], s["language"]): s for s in items["belebele"]["suspects"]}
    assert len(found[PLANTED]["texts"]) == 2 and found[PLANTED]["weakest share right elsewhere"] == 1.0


# --- tokenizer measures and the vocabulary finding -----------------------------------------------------

LOW = [c for c in langtab.codes() if langtab.resource_level(c) == "low"][:8]
HIGH = ["deu_Latn", "fra_Latn"]


def vocab_runs(root, follows: bool | None, low=LOW):
    """XLM-R and XLM-V with premiums on ``low`` + two high languages; XLM-V's premium lower by a varying
    amount, its accuracy gain following the saving (``follows``), going against it (False) or equal (None)."""
    langs = low + HIGH
    p_r = {x: 1.2 + 0.05 * i for i, x in enumerate(langs)}
    saving = {x: 0.04 * ((i * 3) % len(langs)) for i, x in enumerate(langs)}
    p_v = {x: p_r[x] - saving[x] for x in langs}
    base = {x: 50.0 for x in langs}
    sign = 0 if follows is None else (1 if follows else -1)
    xlmv = {x: 50.0 + sign * 100 * saving[x] for x in langs}
    return [
        write_run(root / "xlmr", MODELS["XLM-R"], belebele=base, premium=p_r, tokenizer_id="xlmr", n=100),
        write_run(root / "xlmv", MODELS["XLM-V"], belebele=xlmv, premium=p_v, tokenizer_id="xlmv", n=100),
    ]


def vocab_finding(paths):
    """The vocabulary finding alone, as check_findings runs it (the other claims are tested elsewhere)."""
    from xlt.data.benchmarks import get_benchmark
    from xlt.reporting.checks import CHECKS, Check
    from xlt.reporting.run_tables import seed_groups
    from xlt.reporting.systems import make_systems

    groups = seed_groups([RunInfo(p) for p in paths])
    bench = get_benchmark("belebele")
    claim = next(c for c in bench.report.claims if c.id == "vocabulary_premium_low")
    return CHECKS[claim.check](Check(make_systems(groups), groups, bench, claim, 500, 0)).to_dict()


def test_vocabulary_finding_holds_when_accuracy_follows_the_premium(tmp_path):
    found = {
        f["id"]: f for f in check_findings([RunInfo(p) for p in vocab_runs(tmp_path, True)], samples=500)
    }
    f = found["belebele_vocabulary_premium_low"]
    assert f["verdict"] == HOLDS and "tested directly" in f["why"] and "belebele_xlmv_best_lowest" in f["why"]
    summary = [r for r in f["numbers"] if "spearman rho" in r][0]
    assert summary["spearman rho"] < -0.9 and summary["p (one-sided, rho < 0)"] < 0.05
    assert summary["language"] == f"{len(LOW)} low-resource languages"  # the high ones left out


def test_vocabulary_finding_fails_against_the_premium_and_cannot_be_tested_without_measures(tmp_path):
    assert vocab_finding(vocab_runs(tmp_path / "a", False))["verdict"] == FAILS
    assert (
        vocab_finding(vocab_runs(tmp_path / "b", None))["verdict"] == UNTESTABLE
    )  # no accuracy order to follow
    few = vocab_finding(vocab_runs(tmp_path / "c", True, low=LOW[:4]))
    assert few["verdict"] == UNTESTABLE and "at least 5" in few["why"]
    plain = [
        write_run(tmp_path / "d" / f, MODELS[f], belebele={x: 50.0 for x in LOW}) for f in ("XLM-R", "XLM-V")
    ]
    none = vocab_finding(plain)
    assert none["verdict"] == UNTESTABLE and "tokenizer measures" in none["why"]


def test_systems_sharing_a_tokenizer_are_not_a_pair(tmp_path):
    langs = LOW
    p = {x: 1.2 + 0.1 * i for i, x in enumerate(langs)}
    runs = [
        write_run(
            tmp_path / "r", MODELS["XLM-R"], belebele={x: 50.0 for x in langs}, premium=p, tokenizer_id="t"
        ),
        write_run(
            tmp_path / "i", MODELS["InfoXLM"], belebele={x: 60.0 for x in langs}, premium=p, tokenizer_id="t"
        ),
    ]
    f = vocab_finding(runs)
    assert f["verdict"] == UNTESTABLE and "different tokenizers" in f["why"]


def test_compare_shows_tokenizer_measures_per_system(tmp_path):
    paths = vocab_runs(tmp_path / "runs", True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("xlt.reporting.compare_runs.comparison_plot", lambda *a, **k: None)
        payload = compare_runs(paths, tmp_path / "cmp", samples=50)
    rows = payload["benchmarks"]["belebele"]["tokenizer"]
    by = {(r["language"], r["system"].split("/")[-1]): r for r in rows}
    assert by[(LOW[0], "xlmr")]["premium"] == pytest.approx(1.2) and by[(LOW[0], "xlmr")]["accuracy"] == 50.0
    assert "tokenizer measures per language and system" in (tmp_path / "cmp" / "compare.md").read_text()
    assert (tmp_path / "cmp" / "belebele_tokenizer.csv").is_file()
    df = load_run_results(paths[0])["belebele"].per_language
    assert {
        "premium",
        "fertility",
        "continued_words",
        "unk_rate",
        "tokenizer_notes",
        "tokenizer_fingerprint",
    } <= set(df)


def test_spearman_and_its_permutation_p_value():
    x = np.arange(6.0)
    assert spearman(x, -x) == pytest.approx(-1.0) and spearman(x, np.ones(6)) != spearman(x, np.ones(6))
    assert spearman(np.array([1, 2, 2, 3.0]), np.array([1, 2, 3, 4.0])) == pytest.approx(
        0.9486833
    )  # ties: average ranks
    rho, p = spearman_permutation_test(x, -x, 2000, 0)
    assert rho == pytest.approx(-1.0) and p == pytest.approx(
        1 / 720, abs=0.004
    )  # only the observed order is as extreme
    assert spearman_permutation_test(x, x, 2000, 0)[1] > 0.9  # the wrong direction is not significant


def test_item_share_on_the_command_line(monkeypatch, tmp_path):
    from xlt import report

    seen = {}
    monkeypatch.setattr("xlt.reporting.compare_runs.compare_runs", lambda *a, **k: seen.update(k))
    assert report.compare_main(["--compare", "a", "b", "--out", str(tmp_path), "--item-share", "0.9"]) == 0
    assert seen["item_share"] == 0.9
    assert (
        report.compare_main(["--compare", "a", "b", "--out", str(tmp_path)]) == 0
        and seen["item_share"] == 0.8
    )
    with pytest.raises(SystemExit) as err:
        report.compare_main(["--compare", "a", "b", "--out", str(tmp_path), "--item-share", "1.5"])
    assert err.value.code == 2


def test_systems_of_different_sizes_are_not_a_pair(tmp_path):
    """XLM-R large against XLM-V base: the size would stand in for the vocabulary."""
    large = {"name": "xlmr_large", "name_or_path": "FacebookAI/xlm-roberta-large"}
    p = {x: 1.2 + 0.1 * i for i, x in enumerate(LOW)}
    runs = [
        write_run(
            tmp_path / "r",
            large,
            belebele={x: 50.0 + i for i, x in enumerate(LOW)},
            premium=p,
            tokenizer_id="r",
        ),
        write_run(
            tmp_path / "v",
            MODELS["XLM-V"],
            belebele={x: 50.0 for x in LOW},
            premium={x: v - 0.05 * i for i, (x, v) in enumerate(p.items())},
            tokenizer_id="v",
        ),
    ]
    f = vocab_finding(runs)
    assert f["verdict"] == UNTESTABLE and "same setting and size" in f["why"]
