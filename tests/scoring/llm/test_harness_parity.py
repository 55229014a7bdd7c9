"""xlt's LLM scorer against lm-evaluation-harness itself: same tiny model, same files, same predictions.

The harness side runs its **built-in** task YAMLs (``belebele_<code>``, ``global_mmlu_full_en_<subject>``,
``global_mmlu_en_<category>``, ``xcopa_<lang>``: two options scored as their texts, random few-shot draws
from ``validation``), under their own names, with only the data source swapped for the fixture files and xlt's
bundled XCOPA sample (:func:`tests.fixtures.llm.write_harness_tasks`); the float32 run is shared with
``test_harness_files.py`` (``harness_f32_run`` in conftest.py, which also writes the harness's output folder).
Three comparisons:

* float32: identical predictions, with the shared-prefix KV cache on and off;
* bfloat16 (the GPU default) in the default ``score_dtype=harness``: >= 99% agreement and every
  disagreement a tie at bf16 resolution in the harness's own scores;
* a chat template that writes BOS itself, with the harness's default ``fewshot_as_multiturn``: identical
  predictions in float32.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.fixtures.llm import llm_root_config
from tests.fixtures.llm.harness_folders import PARITY_MAX_LENGTH as MAX_LENGTH
from tests.fixtures.llm.harness_folders import XCOPA, run_harness

lm_eval = pytest.importorskip("lm_eval")
# One xdist worker runs this file and test_harness_files.py (tests/conftest.py): the harness's float32 run of the
# parity set (harness_f32_run, a session fixture) is then made once.
pytestmark = pytest.mark.xdist_group("llm_harness_parity")

BENCH_LANGS = [("belebele", "eng_Latn"), ("belebele", "fra_Latn"), ("global_mmlu", "en"), ("global_mmlu_lite", "en"),
               ("xcopa", "it"), ("xcopa", "zh")]
N_QUESTIONS = 2 * 9 + 12 + 12 + 2 * 8


@pytest.fixture(scope="module")
def setup(parity_setup):
    return parity_setup


def _harness(setup, *, dtype: str, chat: bool = False):
    return run_harness(setup, dtype=dtype, chat=chat)


def _xlt(setup, *, dtype: str = "float32", prefix_cache: bool = True, chat: bool = False, **llm):
    from xlt.data.benchmarks import get_benchmark
    from xlt.scoring.llm.scorer import LLMScorer

    cfg = llm_root_config(
        {"belebele": {"kind": "belebele", "path": str(setup["bele"])},
         "global_mmlu": {"kind": "global_mmlu", "path": str(setup["gmmlu"])},
         "global_mmlu_lite": {"kind": "global_mmlu_lite", "path": str(setup["gmmlu"])},
         "xcopa": {"kind": "xcopa", "path": str(XCOPA)}},
        {"model": str(setup["chat_model" if chat else "model"]), "num_fewshot": 5, "max_length": MAX_LENGTH,
         "batch_size": 4, "dtype": dtype, "device": "cpu", "prefix_cache": prefix_cache, "chat_template": chat,
         **llm},
    )
    scorer = LLMScorer(cfg, progress=False)
    out, metas = {}, {}
    for bench, lang in BENCH_LANGS:
        bcfg = cfg.eval.benchmarks[bench]
        items = get_benchmark(bcfg.kind).load(bcfg, lang)
        scores = scorer.score(items, benchmark=bench, language=lang)
        metas[(bench, lang)] = scorer.language_meta(bench, lang)
        for qid, row in zip(items["id"], scores, strict=True):
            out[(bench, lang, qid)] = row
    return out, metas


def _mismatches(xlt: dict, harness: dict) -> list:
    assert set(xlt) == set(harness), "xlt and the harness scored different questions"
    assert len(xlt) == N_QUESTIONS
    return [k for k in xlt if int(np.argmax(xlt[k])) != int(np.argmax(harness[k]))]


@pytest.fixture(scope="module")
def harness_f32(harness_f32_run):
    return harness_f32_run["predictions"]


@pytest.mark.parametrize("prefix_cache", [True, False], ids=["prefix_cache", "full_pass"])
def test_float32_predictions_match_the_builtin_harness_tasks(setup, harness_f32, prefix_cache):
    scores, metas = _xlt(setup, prefix_cache=prefix_cache)
    assert not _mismatches(scores, harness_f32)
    for key in scores:  # measured max difference: 1e-6 (prefix cache on or off)
        np.testing.assert_allclose(scores[key], harness_f32[key], atol=2e-4, err_msg=str(key))
    # The random model must not predict one letter everywhere, or the comparison would be weak.
    assert len({int(np.argmax(v)) for v in scores.values()}) >= 3
    eng, fra = metas[("belebele", "eng_Latn")], metas[("belebele", "fra_Latn")]
    assert eng["parity"]["score_dtype"] == "harness" and eng["parity"]["log_softmax_dtype"] == "float32"
    assert eng["comparable_to_harness"] is True
    assert eng["truncated_contexts"] == 0 and fra["truncated_contexts"] == 7
    paths = {key: m["prefix_cache"]["questions_per_path"] for key, m in metas.items()}
    if prefix_cache:
        # Belebele: questions 0-4 each skip themselves, so only 5-8 share the first five examples;
        # question i in 1-4 shares examples 0..i-1 with them and reuses those states (question 0's
        # examples start with example 1: too little in common).
        assert paths[("belebele", "eng_Latn")]["prefix_cache"] == 4
        assert paths[("belebele", "eng_Latn")]["partial_prefix"] == 4
        assert paths[("belebele", "eng_Latn")]["full_unshared"] == 1
        assert paths[("belebele", "fra_Latn")]["full_truncated"] == 7
        assert paths[("belebele", "fra_Latn")]["prefix_cache"] == 2
        # Global-MMLU Full: one prefix per subject; Lite: random examples per question, nothing shared.
        assert paths[("global_mmlu", "en")]["prefix_cache"] == 12
        assert metas[("global_mmlu", "en")]["prefix_cache"]["distinct_prefixes"] == 4
        assert metas[("global_mmlu", "en")]["forward"]["prefix_passes"] == 4
    else:
        assert all(p["full_no_prefix"] in (8, 9, 12) for p in paths.values())
    for meta in metas.values():
        assert sum(meta["prefix_cache"]["questions_per_path"].values()) == meta["questions"]


@pytest.mark.slow  # over 15 s (several full runs, a wheel, a sweep): the slow tier, docs/testing.md
def test_bfloat16_agrees_except_on_ties_at_bf16_resolution(setup):
    harness = _harness(setup, dtype="bfloat16")
    scores, metas = _xlt(setup, dtype="bfloat16")
    assert metas[("belebele", "eng_Latn")]["parity"]["log_softmax_dtype"] == "bfloat16"
    mismatched = _mismatches(scores, harness)
    assert 1 - len(mismatched) / N_QUESTIONS >= 0.99, f"{len(mismatched)} of {N_QUESTIONS} predictions differ"
    for key in mismatched:
        h = np.asarray(harness[key])
        best = h.max()
        resolution = 2.0 ** (math.floor(math.log2(abs(best))) - 7)  # bf16 keeps 8 significant bits
        assert best - h[int(np.argmax(scores[key]))] <= resolution, f"{key}: not a near-tie in the harness's scores"


@pytest.mark.slow  # over 15 s (several full runs, a wheel, a sweep): the slow tier, docs/testing.md
def test_chat_template_with_multiturn_fewshot_matches_the_harness(setup):
    harness = _harness(setup, dtype="float32", chat=True)
    scores, metas = _xlt(setup, chat=True)
    assert not _mismatches(scores, harness)
    for key in scores:
        np.testing.assert_allclose(scores[key], harness[key], atol=2e-4, err_msg=str(key))
    parity = metas[("global_mmlu", "en")]["parity"]
    assert parity["chat_template"] is True and parity["fewshot_as_multiturn"] is True
    assert metas[("global_mmlu", "en")]["prefix_cache"]["questions_per_path"]["prefix_cache"] == 12
