"""The statistics behind the findings: fake result sets on which the old definitions gave the wrong answer.

* a seed group: three seeds answer the same questions, so pooling them as 3x the questions made a
  10-point gain on 80 questions look significant (p < 0.05); resampled once per question it is not;
* many per-language tests: 20 languages each significant on its own, none after Holm's correction;
* no shared language: "cannot be tested" with the reason, not "does not hold" on NaN means;
* an encoder-only XCOPA comparison is not described as an LLM's.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.reporting.fake_runs import MODELS, TTA, correct_vector, write_run
from xlt import languages as langtab
from xlt.reporting.compare import RunInfo
from xlt.reporting.findings import ALPHA, FAILS, HOLDS, UNTESTABLE, check_findings
from xlt.scoring.metrics import paired_bootstrap

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
    assert f["verdict"] == HOLDS and row["diff"] == pytest.approx(10.0)
    assert row["questions"] == 80 and row["seeds"] == "3 vs 3"  # 2 languages x 40 questions, not x 3 seeds
    assert 0.15 < row["p_value"] < 0.35 and not row["significant"]
    # the old test (seed pairs pooled into one sample of 240) called the same data significant
    pooled = paired_bootstrap(np.tile(correct_vector(40, 50.0), 6), np.tile(correct_vector(40, 60.0), 6), 2000, 0)
    assert pooled["p_value"] < ALPHA
    assert "resampled once" in f["test"]


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
