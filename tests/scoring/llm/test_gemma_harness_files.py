"""The harness's output folder written by xlt for the real Gemma 3 270M (the packaged model's converted fp32 folder)
against lm-evaluation-harness's own, field by field (:func:`tests.fixtures.llm.harness_folders.compare_folders`),
and ``report --compare`` of the two at exactly 0.

The harness's built-in tasks under their own names (``belebele_eng_Latn``, ``belebele_zho_Hans``, ``xcopa_it``) read
cuts of the bundled samples; 5-shot, float32, ``--limit 3`` (xlt: ``max_questions=3``), batch size 1 (the harness
computes the 262k-way head at every position). Slow tier.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from tests.fixtures.llm import llm_root_config, write_harness_tasks, write_jsonl
from tests.fixtures.llm.harness_folders import compare_folders, run_harness_cli
from tests.gemma import gemma_dir
from xlt import cli
from xlt.run.files import atomic_write_text
from xlt.run.layout import RunDir
from xlt.secrets import redact_config

lm_eval = pytest.importorskip("lm_eval")

pytestmark = pytest.mark.slow

ASSETS = Path(__file__).resolve().parents[3] / "xlt" / "assets" / "demo"
BELEBELE, XCOPA, LIMIT, ROWS = ("eng_Latn", "zho_Hans"), ("it",), 3, 6


def _cut(tmp: Path) -> tuple[Path, Path]:
    bele = tmp / "belebele"
    for code in BELEBELE:
        lines = (ASSETS / "belebele" / "data" / f"{code}.jsonl").read_text(encoding="utf-8").splitlines()
        write_jsonl(bele / "data" / f"{code}.jsonl", [json.loads(x) for x in lines[:ROWS]])
    xcopa = tmp / "xcopa"
    for lang in XCOPA:
        (xcopa / lang).mkdir(parents=True, exist_ok=True)
        for split, n in (("test", LIMIT), ("validation", None)):
            df = pd.read_parquet(ASSETS / "xcopa" / lang / f"{split}-00000-of-00001.parquet")
            (df.head(n) if n else df).to_parquet(xcopa / lang / f"{split}-00000-of-00001.parquet", index=False)
    return bele, xcopa


def test_gemma_written_folder_is_the_harness_s(tmp_path):
    model = gemma_dir()
    bele, xcopa = _cut(tmp_path)
    tasks = write_harness_tasks(tmp_path / "tasks", bele, None, codes=BELEBELE, xcopa_root=xcopa, xcopa_langs=XCOPA,
                                builtin_names=True)
    assert set(tasks) == {"belebele_eng_Latn", "belebele_zho_Hans", "xcopa_it"}
    # the harness's own command line: `lm_eval run ... --limit 3 --output_path harness --log_samples`
    run_harness_cli(["--model", "hf", "--model_args", f"pretrained={model}", "dtype=float32", "--tasks", *tasks,
                     "--num_fewshot", "5", "--batch_size", "1", "--device", "cpu", "--limit", str(LIMIT),
                     "--output_path", str(tmp_path / "harness"), "--log_samples"], tmp_path / "tasks")

    cfg = llm_root_config(
        {"belebele": {"kind": "belebele", "path": str(bele), "max_questions": LIMIT},
         "xcopa": {"kind": "xcopa", "path": str(xcopa), "max_questions": LIMIT}},  # the harness's --limit: every task
        {"model": str(model), "num_fewshot": 5, "batch_size": 1, "dtype": "float32", "device": "cpu",
         "harness_output": str(tmp_path / "xlt")},
    )
    cfg.eval.bootstrap_samples = 100
    run = RunDir(tmp_path / "run")
    cli.run_stages(cfg, run, ["evaluate", "report"])  # the report stage writes the harness folder
    atomic_write_text(run.config, OmegaConf.to_yaml(redact_config(cfg)))
    (theirs,) = (tmp_path / "harness").iterdir()
    (ours,) = (tmp_path / "xlt").iterdir()
    diffs, counted = compare_folders(theirs, ours)
    assert not diffs, "\n".join(diffs)
    assert counted["samples"] == 3 * LIMIT and counted["loglikelihoods"] == 2 * (2 * LIMIT * 4 + LIMIT * 2)

    from xlt.reporting.compare_runs import compare_runs

    payload = compare_runs([run.path, tmp_path / "harness"], tmp_path / "cmp", samples=100)
    for bench, langs in (("belebele", list(BELEBELE)), ("xcopa", list(XCOPA))):
        diffs = payload["benchmarks"][bench]["differences"]
        assert sorted(d["language"] for d in diffs) == sorted(langs)
        assert all(d["n"] == LIMIT and d["diff"] == 0.0 and not d["significant"] for d in diffs)
