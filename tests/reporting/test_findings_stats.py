"""The statistics behind the findings: fake result sets on which the old definitions gave the wrong answer.

* a seed group: three seeds answer the same questions, so pooling them as 3x the questions made a
  10-point gain on 80 questions look significant (p < 0.05); resampled once per question it is not;
* many per-language tests: 20 languages each significant on its own, none after Holm's correction;
* no shared language: "cannot be tested" with the reason, not "does not hold" on NaN means;
* an encoder-only XCOPA comparison is not described as an LLM's.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.reporting.fake_runs import MODELS, TTA, correct_vector, write_run
from xlt import languages as langtab
from xlt.metrics import paired_bootstrap, permutation_p_value
from xlt.reporting.checks import FAILS, HOLDS, UNTESTABLE
from xlt.reporting.compare_runs import compare_runs
from xlt.reporting.findings import check_findings
from xlt.reporting.run_tables import RunInfo
from xlt.reporting.verdicts import ALPHA

LANGS = ["deu_Latn", "fra_Latn"]


def _findings(runs, samples=2000):
    return {x["id"]: x for x in check_findings([RunInfo(r) for r in runs], samples=samples)}


def test_a_seed_group_does_not_inflate_the_number_of_questions(tmp_path):
    runs = []
    for s in (1, 2, 3):  # every seed of a system answers alike: seeds add no questions
        runs.append(write_run(tmp_path / f"z{s}", MODELS["XLM-R"], s, belebele={c: 50.0 for c in LANGS}))
        runs.append(write_run(tmp_path / f"t{s}", MODELS["XLM-R"], s, translate=TTA, belebele={c: 60.0 for c in LANGS}))
    f = _findings(runs)["belebele_translate_train_all_beats_zero_shot"]
    row = f["numbers"][0]
    # 10 points on 80 questions: not significant, so the verdict (decided by the test) is "does not hold"
    assert f["verdict"] == FAILS and row["diff"] == pytest.approx(10.0)
    assert row["questions"] == 80 and row["seeds"] == "3 vs 3"  # 2 languages x 40 questions, not x 3 seeds
    assert 0.05 < row["p_value (one-sided)"] < 0.35 and not row["significant"]
    # the old test (seed pairs pooled into one sample of 240) called the same data significant
    pooled = paired_bootstrap(np.tile(correct_vector(40, 50.0), 6), np.tile(correct_vector(40, 60.0), 6), 2000, 0)
    assert pooled["p_value"] < ALPHA
    assert "resampling the questions once" in f["test"]


def test_per_language_tests_are_corrected_for_multiple_comparisons(tmp_path):
    codes = langtab.codes()[:20]
    runs = [write_run(tmp_path / "llm", None, 1, belebele={c: 50.0 for c in codes},
                      belebele_tt={c: 70.0 for c in codes}, llm="Qwen/Qwen2.5-7B", n=60)]
    f = _findings(runs, samples=1000)["belebele_translate_test_beats_in_language_llm"]
    row = f["numbers"][0]
    assert f["verdict"] == HOLDS and row["languages"] == 20 and row["translate-test higher"] == 20
    # each language alone: p < 0.05; twenty of them under Holm's correction: none below 0.05
    assert row["significantly higher (raw)"] == 20 and row["significantly higher (Holm)"] == 0
    assert "Holm" in f["test"] and "0 after Holm's correction, 20 uncorrected" in f["why"]


def test_no_shared_language_cannot_be_tested(tmp_path):
    runs = [write_run(tmp_path / "z", MODELS["XLM-V"], 1, belebele={c: 50.0 for c in LANGS}),
            write_run(tmp_path / "t", MODELS["XLM-V"], 1, translate=TTA, belebele={"ell_Grek": 60.0, "heb_Hebr": 60.0}),
            write_run(tmp_path / "llm", None, 1, belebele={c: 50.0 for c in LANGS}, belebele_tt={"ell_Grek": 60.0},
                      llm="Qwen/Qwen2.5-7B")]
    f = _findings(runs, samples=100)
    tta = f["belebele_translate_train_all_beats_zero_shot"]
    assert tta["verdict"] == UNTESTABLE and "no language both evaluated" in tta["why"]
    tt = f["belebele_translate_test_beats_in_language_llm"]
    assert tt["verdict"] == UNTESTABLE and "no Belebele language with questions answered both" in tt["why"]
    assert FAILS not in {x["verdict"] for x in f.values()}


def test_an_encoder_only_comparison_is_not_described_as_an_llm(tmp_path):
    xcopa = {"xcopa": {"kind": "xcopa", "accuracies": {"it": 60.0, "tr": 55.0}, "n_options": 2}}
    runs = [write_run(tmp_path / "a", MODELS["XLM-R"], 1, others=xcopa),
            write_run(tmp_path / "b", MODELS["XLM-V"], 1, others=xcopa)]
    f = _findings(runs, samples=100)["xcopa_translate_test_beats_in_language"]
    assert f["verdict"] == UNTESTABLE and "LLM" not in f["why"]
    assert "found the systems" in f["why"] and "only in-language" in f["why"]


def _gm_runs(tmp_path, per_system, n=200, drop_subsets=False):
    runs = []
    for name, family, accs in per_system:
        path = write_run(tmp_path / name, MODELS[family], 1, gmmlu=accs, n=n)
        if drop_subsets:  # predictions written before evaluate recorded each item's subsets
            for f in (path / "eval" / "global_mmlu" / "predictions").glob("*.jsonl"):
                rows = [json.loads(x) for x in f.read_text().splitlines()]
                f.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "subsets"}) + "\n" for r in rows))
        runs.append(path)
    return runs


def test_a_near_tie_on_means_is_no_per_language_rank_change(tmp_path):
    """X wins every subset of de, Y every subset of fr: per language CA and CS rank as MA (no change). Over
    the mean of both languages, Y leads X on CS by 0.5 and X leads Y on CA by 0.5: the old check (ranks of
    the means, CS against CA) called that a rank change and the finding held."""
    runs = _gm_runs(tmp_path, [("x", "XLM-R", {"de": (60.0, 70.0), "fr": (40.0, 51.0)}),
                               ("y", "XLM-V", {"de": (40.0, 50.0), "fr": (61.0, 70.0)}),
                               ("z", "InfoXLM", {"de": (20.0, 30.0), "fr": (20.0, 30.0)})])  # last everywhere
    payload = compare_runs(runs, tmp_path / "cmp", samples=300)
    f = {x["id"]: x for x in payload["findings"]}["gmmlu_rankings_change_cs_ca"]
    assert f["verdict"] == FAILS
    mean = f["numbers"][-1]
    assert mean["rank changes CS"] == mean["rank changes CA"] == 0 and mean["position shifts CS"] == 0
    assert mean["shift difference p_value"] == pytest.approx(1.0)  # no difference observed
    # the comparison's ranking of the means (the old definition) does see a CS/CA swap
    swap = [r for r in payload["benchmarks"]["global_mmlu"]["rank_changes"] if (r["from"], r["to"]) == ("CS", "CA")]
    assert swap[0]["rank_changes"] == 2


def test_systems_are_ranked_only_on_languages_they_all_have(tmp_path):
    """Z is ranked on de and fr only, although X and Y also have sw (where Z would lose), and without the
    predictions' subset labels the check still counts, saying why no bootstrap."""
    cs_moves = ("de", "fr")
    x = {c: (40.0, 80.0) for c in cs_moves} | {"sw": (40.0, 80.0)}
    y = {c: (50.0, 62.0) for c in cs_moves} | {"sw": (50.0, 62.0)}
    z = {c: (60.0, 45.0) for c in cs_moves}
    runs = _gm_runs(tmp_path, [("x", "XLM-R", x), ("y", "XLM-V", y), ("z", "InfoXLM", z)], n=40, drop_subsets=True)
    f = {r["id"]: r for r in check_findings([RunInfo(p) for p in runs], samples=100)}["gmmlu_rankings_change_cs_ca"]
    assert [r["language"] for r in f["numbers"]] == ["de", "fr", "mean over 2"]
    assert "over 2 languages and 3 systems" in f["why"] and "no subset labels" in f["why"]
    # the counts alone do not decide: without the permutation test, no verdict
    assert f["verdict"] == UNTESTABLE and "no test" in f["why"]
    from xlt.reporting.run_tables import seed_groups, system_subset_scores

    scores = system_subset_scores(seed_groups([RunInfo(p) for p in runs]), "global_mmlu", ("CS", "CA"))
    assert list(scores["languages"]) == [2, 2, 2]


def test_the_lowest_resource_claim_needs_the_lowest_level(tmp_path):
    """A three-level taxonomy (a grouping file with Global-MMLU's high / mid / low tiers) and high- and
    mid-resource languages only: the old check tested "XLM-V is best on the lowest-resource languages" on the
    mid-resource ones (the lowest level present) and it held; now it cannot be tested, and neither can InfoXLM
    on the levels above the lowest."""
    groups = tmp_path / "tiers.tsv"
    groups.write_text("deu_Latn\thigh\nfra_Latn\thigh\nell_Grek\tmid\nheb_Hebr\tmid\nyor_Latn\tlow\n")
    accs = {"deu_Latn": 80.0, "fra_Latn": 78.0, "ell_Grek": 60.0, "heb_Hebr": 62.0}  # high, high, mid, mid
    shifts = {"XLM-R": (-20, -20), "XLM-V": (-10, +10), "InfoXLM": (0, 0)}  # (high, mid): XLM-V best on mid

    def runs(tag, extra):
        return [write_run(tmp_path / f"{fam}{tag}", MODELS[fam], 1, resource_groups=groups, n=200,
                          belebele={k: v + (hi if v > 70 else mid) for k, v in accs.items()} | {k: v + mid for k, v in extra.items()})
                for fam, (hi, mid) in shifts.items()]

    f = _findings(runs("", {}), samples=200)
    low = f["belebele_xlmv_best_lowest"]
    assert low["verdict"] == UNTESTABLE and "lowest resource level ('low')" in low["why"] and "['high', 'mid']" in low["why"]
    hm = f["belebele_infoxlm_best_high_medium"]
    assert hm["verdict"] == UNTESTABLE and "lowest resource level" in hm["why"]
    # with one low-resource language all three have, both are tested: XLM-V best there, InfoXLM not on mid
    f = _findings(runs("2", {"yor_Latn": 30.0}), samples=200)
    assert f["belebele_xlmv_best_lowest"]["verdict"] == HOLDS
    assert f["belebele_infoxlm_best_high_medium"]["verdict"] == FAILS  # XLM-V leads the mid level


def test_every_belebele_variant_has_an_nllb_resource_level_and_the_claims_use_it(tmp_path):
    """The default levels are NLLB's (high / low) for all 122 variants: XLM-V best on the low-resource ones
    is tested on them, InfoXLM on the high-resource ones, over the languages all three systems have."""
    codes = langtab.codes()
    assert len(codes) == 122 and {langtab.resource_level(c) for c in codes} == {"high", "low"}
    low = [c for c in codes if langtab.resource_level(c) == "low"]
    shift = {"XLM-R": (0, 0), "XLM-V": (-5, 10), "InfoXLM": (8, -5)}
    runs = [write_run(tmp_path / fam, MODELS[fam], 1, belebele={c: 55.0 + (lo if c in low else hi) for c in codes})
            for fam, (hi, lo) in shift.items()]
    f = _findings(runs, samples=100)
    rows = {r["resource"]: r for r in f["belebele_xlmv_best_lowest"]["numbers"]}
    assert rows["low"]["languages"] == len(low) == 69 and rows["high"]["languages"] == 53
    assert f["belebele_xlmv_best_lowest"]["verdict"] == HOLDS and rows["low"]["best"] == "XLM-V"
    assert f["belebele_infoxlm_best_high_medium"]["verdict"] == HOLDS and rows["high"]["best"] == "InfoXLM"
    assert "NLLB" in f["belebele_xlmv_best_lowest"]["claim"]


def test_human_vs_machine_translation_compares_the_same_language(tmp_path):
    """The human-translated Global-MMLU languages here are high-resource (de, fr) or better served (sw) and
    score 70; the machine-translated ones (pl, el, ha) score 40. Comparing those groups (the old check)
    "finds" HT above MT; the machine-translated versions of de, fr and sw score as high as the human ones
    (and higher for sw), so HT is not above MT on the high-resource tier."""
    gm = {c: (70.0, 70.0) for c in ("de", "fr", "sw")} | {c: (40.0, 40.0) for c in ("pl", "el", "ha")}
    mt = {"global_mmlu_mt": {"kind": "global_mmlu", "machine_translated": True, "n_options": 4,
                             "accuracies": {"de": 70.0, "fr": 70.0, "sw": 75.0}}}
    runs = [write_run(tmp_path / "a", MODELS["XLM-R"], 1, gmmlu=gm, others=mt, n=80)]
    f = _findings(runs, samples=500)["gmmlu_human_translated_above_machine_translated"]
    rows = {r["tier"]: r for r in f["numbers"]}
    assert f["verdict"] == FAILS and set(rows) == {"high", "low"}
    assert rows["high"]["languages"] == 2 and rows["high"]["HT - MT"] == pytest.approx(0.0)
    assert rows["low"]["HT - MT"] == pytest.approx(-5.0) and rows["low"]["HT higher"] == 0
    assert rows["high"]["HT significantly higher (Holm)"] == 0 and "per resource tier" in f["test"]
    # without the machine-translated variant: cannot be tested, never the cross-language comparison
    f = _findings([write_run(tmp_path / "b", MODELS["XLM-R"], 1, gmmlu=gm)], samples=100)
    ht = f["gmmlu_human_translated_above_machine_translated"]
    assert ht["verdict"] == UNTESTABLE and "machine_translated: true" in ht["why"] and not ht["numbers"]


def test_a_smaller_subset_moves_rankings_by_noise_alone():
    """Four systems of equal skill; per language CS has 50 questions, CA 250. CS moves the ranking more
    (the point estimate "holds"), but shuffling the CS/CA labels moves it as much: not significant."""
    from xlt.reporting import rank_changes as rc

    rng = np.random.default_rng(3)
    masks = {"MA": np.ones(300), "CA": np.r_[np.ones(250), np.zeros(50)], "CS": np.r_[np.zeros(250), np.ones(50)]}
    data = [((rng.random((4, 300)) < 0.6).astype(float), masks) for _ in range(10)]
    stats = [rc.language_stats({s: (m[s] @ c.T) / m[s].sum() for s in m}, "MA", "CA", "CS") for c, m in data]
    observed = float(np.mean([x["position shifts CS"] - x["position shifts CA"] for x in stats]))
    perm = rc.permutation(data, "MA", "CA", "CS", 1000, 0)
    null = perm["shifts_b"] - perm["shifts_a"]
    assert observed > 1.5 and null.mean() > 1.5  # the small subset's noise, in the data and under the null
    assert permutation_p_value(null, observed) > 0.2
    # overlapping subsets cannot be exchanged
    assert rc.permutation(data[:1], "MA", "MA", "CS", 10, 0) is None


def test_threshold_counts_are_over_the_languages_all_systems_have(tmp_path):
    """XLM-V was also evaluated on six more languages (all at 60): counted over each run's own languages
    (the old check) it had the most above 50; over the four languages all three have, InfoXLM has."""
    shared = {"deu_Latn": 62.0, "fra_Latn": 61.0, "ell_Grek": 45.0, "heb_Hebr": 45.0}
    extra = {c: 60.0 for c in ("swh_Latn", "yor_Latn", "amh_Ethi", "hau_Latn", "ibo_Latn", "sna_Latn")}
    runs = [write_run(tmp_path / "r", MODELS["XLM-R"], 1, belebele={k: v - 20 for k, v in shared.items()}),
            write_run(tmp_path / "v", MODELS["XLM-V"], 1, belebele={"deu_Latn": 55.0, "fra_Latn": 40.0,
                                                                    "ell_Grek": 40.0, "heb_Hebr": 40.0} | extra),
            write_run(tmp_path / "i", MODELS["InfoXLM"], 1, belebele=shared)]
    f = _findings(runs, samples=100)["belebele_xlmv_most_ge_50"]
    counts = {r["model"]: r["languages > 50 (seed-mean accuracy)"] for r in f["numbers"]}
    assert counts == {"XLM-R": 0, "XLM-V": 1, "InfoXLM": 2} and f["verdict"] == FAILS
    assert all(r["languages compared"] == 4 for r in f["numbers"]) and "of the 4 languages" in f["why"]


@pytest.mark.parametrize("damage", ["deleted", "malformed"])
def test_a_damaged_grouping_file_of_a_compared_run_is_named(tmp_path, damage):
    """A run's eval.resource_groups file gone or broken since: --compare names the run and the file (and the
    line), never compares with the table's levels as if the run had been reported that way."""
    from xlt.errors import DataError

    groups = tmp_path / "tiers.tsv"
    groups.write_text("deu_Latn\thigh\nyor_Latn\tlow\n")
    run = write_run(tmp_path / "r", MODELS["XLM-R"], 1, resource_groups=groups, belebele={"deu_Latn": 60.0, "yor_Latn": 40.0})
    assert RunInfo(run).results["belebele"].per_language["resource"].tolist() == ["high", "low"]
    if damage == "deleted":
        groups.unlink()
        match = r"tiers.tsv: resource grouping file not found"
    else:
        groups.write_text("deu_Latn\thigh\nyor_Latn low\n")
        match = r"tiers.tsv:2: expected 'code<TAB>group'"
    with pytest.raises(DataError, match=match) as err:
        RunInfo(run)
    assert str(run) in str(err.value) and "leave the run out of --compare" in str(err.value)


def _rename_question_ids(run, prefix: str) -> None:
    """Give every question of ``run`` another id: no question is shared with another system's run."""
    for preds in run.glob("eval/*/predictions/*.jsonl"):
        rows = [json.loads(line) for line in preds.read_text().splitlines() if line.strip()]
        preds.write_text("".join(json.dumps({**r, "id": prefix + str(r["id"])}) + "\n" for r in rows))


def test_a_part_that_cannot_be_tested_makes_the_verdict_untestable(tmp_path):
    """Issue 40: "XLM-V best on the lowest-resource languages" needs XLM-V above XLM-R *and* above InfoXLM.
    Tested on every part it does not hold (InfoXLM is close); when the part against InfoXLM cannot be tested
    (the two share no question id: p-value NaN), Python's max() kept the other part's p-value and it "held"."""
    low = ["yor_Latn", "wol_Latn"]
    assert all(langtab.resource_level(c) == "low" for c in low)
    accs = {"XLM-R": 40.0, "XLM-V": 62.0, "InfoXLM": 60.0}

    def runs(tag):
        return {fam: write_run(tmp_path / f"{fam}{tag}", MODELS[fam], 1, n=200,
                               belebele={"deu_Latn": 70.0, "fra_Latn": 70.0} | {c: acc for c in low})
                for fam, acc in accs.items()}

    tested = _findings(list(runs("").values()), samples=500)["belebele_xlmv_best_lowest"]
    assert tested["verdict"] == FAILS, tested["why"]
    rs = runs("2")
    _rename_question_ids(rs["InfoXLM"], "other-")
    f = _findings(list(rs.values()), samples=500)["belebele_xlmv_best_lowest"]
    assert f["verdict"] == UNTESTABLE, f["why"]
    assert "low: XLM-V vs InfoXLM" in f["why"] and "cannot be tested" in f["why"]


def test_a_threshold_count_with_an_untestable_part_cannot_be_tested(tmp_path):
    """The same rule in the threshold count (family_most_above): a family sharing no question with the target."""
    from xlt.data.benchmarks import get_benchmark

    claim = next(c for c in get_benchmark("belebele").report.claims if c.check == "family_most_above")
    family, t = claim.params["family"], float(claim.params["threshold"])
    rs = {fam: write_run(tmp_path / fam, MODELS[fam], 1, n=200,
                         belebele={c: (t + 20 if fam == family else t - 20) for c in langtab.codes()[:8]})
          for fam in claim.params["families"]}
    tested = _findings(list(rs.values()), samples=500)[f"belebele_{claim.id}"]
    assert tested["verdict"] == HOLDS, tested["why"]
    other = next(f for f in claim.params["families"] if f != family)
    _rename_question_ids(rs[other], "other-")
    f = _findings(list(rs.values()), samples=500)[f"belebele_{claim.id}"]
    assert f["verdict"] == UNTESTABLE and f"{family} vs {other}" in f["why"], f["why"]


def test_a_pair_that_cannot_be_compared_leaves_every_pair_undecided(tmp_path):
    """translate-train-all beats zero-shot "for every pair": a pair without the benchmark's results is a part
    that cannot be tested (it was listed as "not compared" while the other pair decided "holds")."""
    langs = {c: 50.0 for c in langtab.codes()[:6]}
    runs = [write_run(tmp_path / "rz", MODELS["XLM-R"], 1, belebele=langs, n=100),
            write_run(tmp_path / "rt", MODELS["XLM-R"], 1, translate=TTA, belebele={c: 75.0 for c in langs}, n=100)]
    f = _findings(runs, samples=300)["belebele_translate_train_all_beats_zero_shot"]
    assert f["verdict"] == HOLDS, f["why"]
    runs += [write_run(tmp_path / "vz", MODELS["XLM-V"], 1, belebele=langs, n=100),
             write_run(tmp_path / "vt", MODELS["XLM-V"], 1, translate=TTA, gmmlu={"de": (60.0, 60.0)}, n=100)]
    f = _findings(runs, samples=300)["belebele_translate_train_all_beats_zero_shot"]
    assert f["verdict"] == UNTESTABLE and "cannot be tested" in f["why"] and "no Belebele results" in f["why"], f["why"]
