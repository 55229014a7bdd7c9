"""xlt's LLM scorer against lm-evaluation-harness itself: same tiny model, same files, same predictions."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fixtures.llm import (
    build_tiny_lm,
    corpus,
    harness_predictions,
    llm_root_config,
    write_belebele,
    write_global_mmlu,
    write_harness_tasks,
)

lm_eval = pytest.importorskip("lm_eval")

MAX_LENGTH = 512  # Belebele 5-shot contexts are ~870 tokens: left truncation is exercised too.
BENCH_LANGS = [("belebele", "eng_Latn"), ("belebele", "fra_Latn"), ("global_mmlu", "en"), ("global_mmlu_lite", "en")]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("llm_parity")
    bele = write_belebele(root / "belebele")
    gmmlu = write_global_mmlu(root / "gmmlu")
    model_dir = build_tiny_lm(root / "model", corpus([bele, gmmlu]))
    cfg = llm_root_config(
        {"belebele": {"kind": "belebele", "path": str(bele)},
         "global_mmlu": {"kind": "global_mmlu", "path": str(gmmlu)},
         "global_mmlu_lite": {"kind": "global_mmlu_lite", "path": str(gmmlu)}},
        {"model": str(model_dir), "num_fewshot": 5, "max_length": MAX_LENGTH, "batch_size": 4},
    )
    return root, bele, gmmlu, model_dir, cfg


@pytest.fixture(scope="module")
def harness(setup):
    from lm_eval.tasks import TaskManager

    root, bele, gmmlu, model_dir, _ = setup
    tasks = write_harness_tasks(root / "tasks", bele, gmmlu)
    results = lm_eval.simple_evaluate(
        model="hf",
        model_args={"pretrained": str(model_dir), "dtype": "float32", "device": "cpu", "max_length": MAX_LENGTH},
        tasks=list(tasks), num_fewshot=5, batch_size=4, log_samples=True,
        task_manager=TaskManager(include_path=str(root / "tasks")), fewshot_random_seed=1234,
    )
    return harness_predictions(results, tasks)


@pytest.fixture(scope="module")
def xlt_scores(setup):
    from xlt.data.benchmarks import get_benchmark
    from xlt.scoring.llm.scorer import LLMScorer

    *_, cfg = setup
    scorer = LLMScorer(cfg, progress=False)
    out, metas = {}, {}
    for bench, lang in BENCH_LANGS:
        bcfg = cfg.eval.benchmarks[bench]
        items = get_benchmark(bcfg.kind).load(bcfg, lang)
        scores = scorer.score(items, benchmark=bench, language=lang)
        metas[(bench, lang)] = scorer.last_meta
        for qid, row in zip(items["id"], scores, strict=True):
            out[(bench, lang, qid)] = row
    return out, metas


def test_predictions_match_harness_question_for_question(harness, xlt_scores):
    scores, _ = xlt_scores
    assert set(scores) == set(harness), "xlt and the harness scored different questions"
    assert len(scores) == 2 * 9 + 12 + 12
    mismatched = [k for k in scores if int(np.argmax(scores[k])) != int(np.argmax(harness[k]))]
    assert not mismatched, f"predictions differ on {mismatched}"
    for key in scores:
        np.testing.assert_allclose(scores[key], harness[key], atol=2e-4, err_msg=str(key))
    # The random model must not predict one letter everywhere, or the comparison would be weak.
    assert len({int(np.argmax(v)) for v in scores.values()}) >= 3


def test_one_forward_pass_per_question_and_truncation(xlt_scores):
    _, metas = xlt_scores
    bele = metas[("belebele", "eng_Latn")]
    assert bele["fewshot"] == {"k": 5, "split": "test", "sampler": "first_n", "seed": None}
    assert bele["forward"]["sequences"] == 9 and bele["single_pass_questions"] == 9
    assert bele["truncated_contexts"] == 9 and bele["max_length"] == MAX_LENGTH
    assert metas[("global_mmlu", "en")]["fewshot"]["sampler"] == "first_n"
    lite = metas[("global_mmlu_lite", "en")]["fewshot"]
    assert lite["sampler"] == "random" and lite["seed"] == 1234
