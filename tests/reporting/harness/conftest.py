"""One shared set-up for the tests of lm-evaluation-harness's folders as the harness's own tools read them: the
tiny Llama and fixture data, the harness's built-in tasks reading it, and

* ``harness_runs``: three runs of lm-evaluation-harness's **own command line** (``lm_eval run``, in this
  process: :func:`tests.fixtures.llm.harness_folders.run_harness_cli`) into **one** ``--output_path``, as a user
  adds runs to a folder: (A) Belebele eng/fra ``--limit 3``, (B) Belebele fra and XCOPA it ``--limit 4``, (C)
  HellaSwag ``--limit 2`` from an ``lm_eval --config`` file kept in that folder (``config.yaml``);
* ``xlt_harness_run``: xlt's evaluate stage of the same model and data (Belebele eng/fra ``max_questions=3``,
  Global-MMLU en ``max_questions=5``; 5-shot, float32, batch 4, cpu), whose results ``export_results`` writes as
  the harness's folder.
"""

from __future__ import annotations

import json

import pytest
import yaml
from omegaconf import OmegaConf

from tests.fixtures.llm import (
    build_tiny_lm,
    corpus,
    harness_task_dir,
    llm_root_config,
    write_belebele,
    write_global_mmlu,
    write_harness_tasks,
)
from tests.fixtures.llm.harness_folders import XCOPA, run_harness_cli

pytest.importorskip("lm_eval")


def _hellaswag(root, tasks_dir) -> None:
    """The harness's built-in ``hellaswag`` task on four local rows of its upstream schema."""
    rows = [{"ind": i, "activity_label": "Cooking", "ctx_a": f"A cook stands at table {i}.",
             "ctx_b": "she", "ctx": f"A cook stands at table {i}. she",
             "endings": ["cuts the bread.", "sings a song.", "opens the door.", "walks away."],
             "source_id": f"x{i}", "split": "val", "split_type": "indomain", "label": str(i % 4)} for i in range(4)]
    root.mkdir(parents=True, exist_ok=True)
    for split in ("train", "validation"):
        (root / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = {"include": str(harness_task_dir() / "hellaswag" / "hellaswag.yaml"), "task": "hellaswag",
           "dataset_path": "json", "dataset_name": None,
           "dataset_kwargs": {"data_files": {s: str(root / f"{s}.jsonl") for s in ("train", "validation")}}}
    (tasks_dir / "hellaswag.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")


@pytest.fixture(scope="session")
def harness_setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("harness_folders")
    bele = write_belebele(root / "belebele")
    gmmlu = write_global_mmlu(root / "gmmlu")
    model = build_tiny_lm(root / "model", corpus([bele, gmmlu]))
    tasks = write_harness_tasks(root / "tasks", bele, gmmlu, xcopa_root=XCOPA, xcopa_langs=("it",), builtin_names=True)
    _hellaswag(root / "hellaswag", root / "tasks")
    return {"root": root, "bele": bele, "gmmlu": gmmlu, "model": model, "tasks": tasks}


def cli_args(setup, tasks: list[str], limit: int, out) -> list[str]:
    """``lm_eval run`` arguments equivalent to xlt's settings of ``xlt_harness_run``."""
    return ["--model", "hf", "--model_args", f"pretrained={setup['model']}", "dtype=float32", "--tasks", *tasks,
            "--num_fewshot", "5", "--batch_size", "4", "--device", "cpu", "--limit", str(limit),
            "--output_path", str(out), "--log_samples"]


@pytest.fixture(scope="session")
def harness_runs(harness_setup):
    """The three runs into one output folder (see the module docstring); ``results``: each run's
    ``simple_evaluate`` results (A, B, C), ``folder``: the model's folder, ``output``: the ``--output_path``."""
    out = harness_setup["root"] / "harness_out"
    tasks_dir = harness_setup["root"] / "tasks"
    a = run_harness_cli(cli_args(harness_setup, ["belebele_eng_Latn", "belebele_fra_Latn"], 3, out), tasks_dir)
    b = run_harness_cli(cli_args(harness_setup, ["belebele_fra_Latn", "xcopa_it"], 4, out), tasks_dir)
    config = out / "config.yaml"  # an lm_eval --config file, kept with the outputs it made
    config.write_text(yaml.safe_dump({
        "model": "hf", "model_args": {"pretrained": str(harness_setup["model"]), "dtype": "float32"},
        "tasks": ["hellaswag"], "num_fewshot": 0, "batch_size": 4, "device": "cpu", "limit": 2,
        "output_path": str(out), "log_samples": True}), encoding="utf-8")
    c = run_harness_cli(["--config", str(config)], tasks_dir)
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return {"results": [a, b, c], "folder": folder, "output": out}


@pytest.fixture(scope="session")
def xlt_harness_run(harness_setup, tmp_path_factory):
    """xlt's evaluate stage of the set-up (see the module docstring) and its config.yaml."""
    from xlt import cli
    from xlt.run.files import atomic_write_text
    from xlt.run.layout import RunDir
    from xlt.secrets import redact_config

    cfg = llm_root_config(
        {"belebele": {"kind": "belebele", "path": str(harness_setup["bele"]), "max_questions": 3},
         "global_mmlu": {"kind": "global_mmlu", "path": str(harness_setup["gmmlu"]), "max_questions": 5}},
        {"model": str(harness_setup["model"]), "num_fewshot": 5, "batch_size": 4, "dtype": "float32",
         "device": "cpu"})
    cfg.eval.bootstrap_samples = 100
    run = RunDir(tmp_path_factory.mktemp("xlt_harness") / "run")
    cli.run_stages(cfg, run, ["evaluate"])
    atomic_write_text(run.config, OmegaConf.to_yaml(redact_config(cfg)))
    return {"cfg": cfg, "run": run}
