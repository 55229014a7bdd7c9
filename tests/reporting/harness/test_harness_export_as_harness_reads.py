"""xlt's export of its results as lm-evaluation-harness's folder (``xlt/reporting/harness/export.py``), held to the
harness's own output and read by the harness's own tools: its command line's ``config`` for the equivalent
``lm_eval run`` (key by key), its result schema (``lm_eval.result_schema.EvalResults``), its meaning of
``--limit``, its file helpers (``lm_eval.utils``), ``make_table`` and its W&B logger."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path

import pytest
import typing_extensions

lm_eval = pytest.importorskip("lm_eval")

NOT_COMPARED_CONFIG = {"model": "the backend that scored: the harness's --model hf, xlt's own scorer ('xlt')"}


def _results_file(folder: Path) -> dict:
    from lm_eval.utils import get_latest_filename, get_results_filenames

    files = [str(p) for p in folder.iterdir()]
    return json.loads(Path(get_latest_filename(get_results_filenames(files))).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def exports(xlt_harness_run, tmp_path_factory):
    """The run exported whole (Belebele capped at 3, Global-MMLU en at 5), Belebele alone, Global-MMLU alone."""
    from omegaconf import OmegaConf

    from xlt.reporting.harness.export import export_results

    run, cfg = xlt_harness_run["run"], xlt_harness_run["cfg"]
    out = tmp_path_factory.mktemp("exports")
    whole = export_results(cfg.eval, run, out / "whole")
    bele = OmegaConf.merge(cfg.eval, {"benchmarks": {"global_mmlu": {"enabled": False}}})
    belebele = export_results(bele, run, out / "belebele")
    mmlu = OmegaConf.merge(cfg.eval, {"benchmarks": {"belebele": {"enabled": False}}})
    gmmlu = export_results(mmlu, run, out / "gmmlu")
    return {"whole": whole, "belebele": belebele, "gmmlu": gmmlu}


def _harness_file(harness_runs, run: int) -> dict:
    """The results file the harness's CLI wrote in run ``run`` (0: A, 1: B, 2: C), by its date."""
    from lm_eval.utils import get_file_datetime, get_results_filenames

    files = sorted(get_results_filenames([str(p) for p in harness_runs["folder"].iterdir()]),
                   key=lambda f: get_file_datetime(f))
    return json.loads(Path(files[run]).read_text(encoding="utf-8"))


def test_config_is_what_the_harness_cli_writes_for_the_same_run(harness_runs, exports):
    """Run A (``lm_eval run --model hf --model_args pretrained=<tiny> dtype=float32 --tasks belebele_eng_Latn
    belebele_fra_Latn --num_fewshot 5 --batch_size 4 --device cpu --limit 3 --log_samples``) and xlt's export of
    the same model, data and settings: every key of ``config`` and the CLI-set top-level fields equal."""
    theirs = _harness_file(harness_runs, 0)
    ours = _results_file(exports["belebele"])
    assert set(theirs["results"]) == set(ours["results"]) == {"belebele_eng_Latn", "belebele_fra_Latn"}
    assert set(theirs["config"]) == set(ours["config"])
    diffs = {k: (theirs["config"][k], ours["config"][k]) for k in theirs["config"]
             if k not in NOT_COMPARED_CONFIG and theirs["config"][k] != ours["config"][k]}
    assert not diffs, diffs
    # the harness's own types too: --batch_size a string, --limit a float, gen_kwargs the CLI's {}
    assert ours["config"]["batch_size"] == "4" and ours["config"]["limit"] == 3.0
    assert isinstance(ours["config"]["limit"], float) and ours["config"]["gen_kwargs"] == {}
    assert ours["config"]["model_num_parameters"] == theirs["config"]["model_num_parameters"] > 0
    for key in ("fewshot_as_multiturn", "chat_template", "chat_template_sha", "system_instruction",
                "system_instruction_sha", "model_name", "model_name_sanitized", "n-shot", "n-samples", "versions",
                "tokenizer_pad_token", "tokenizer_eos_token", "tokenizer_bos_token", "eot_token_id", "max_length"):
        assert theirs[key] == ours[key], key
    assert ours["fewshot_as_multiturn"] is None  # the CLI's without --apply_chat_template


def _conforms(value, tp, ns, path: str, out: list[str]) -> None:
    """Where ``value`` is not of the schema's type ``tp`` (its TypedDicts' declared keys, recursively)."""
    if isinstance(tp, str):
        tp = eval(tp, ns)  # noqa: S307 - the schema's own forward references, in its module
    if isinstance(tp, typing.ForwardRef):
        tp = eval(tp.__forward_arg__, ns)  # noqa: S307
    if tp is typing.Any:
        return
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        trials = []
        for arm in typing.get_args(tp):
            sub: list[str] = []
            _conforms(value, arm, ns, path, sub)
            if not sub:
                return
            trials.append(sub)
        out.append(f"{path}: {value!r:.60} is not {tp}")
        return
    if tp is type(None):
        if value is not None:
            out.append(f"{path}: {value!r:.60} is not None")
        return
    if typing_extensions.is_typeddict(origin or tp):
        if not isinstance(value, dict):
            out.append(f"{path}: {value!r:.60} is not an object")
            return
        hints = typing_extensions.get_type_hints(origin or tp, localns=ns)
        for key, sub in hints.items():
            if key in value:
                _conforms(value[key], sub, ns, f"{path}.{key}", out)
        return
    if origin is dict:
        if not isinstance(value, dict):
            out.append(f"{path}: {value!r:.60} is not an object")
            return
        _, vt = typing.get_args(tp)
        for key, v in value.items():
            _conforms(v, vt, ns, f"{path}.{key}", out)
        return
    if origin is list:
        if not isinstance(value, list):
            out.append(f"{path}: {value!r:.60} is not a list")
            return
        (it,) = typing.get_args(tp)
        for i, v in enumerate(value):
            _conforms(v, it, ns, f"{path}[{i}]", out)
        return
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, origin or tp)
    if not ok:
        out.append(f"{path}: {value!r:.60} is not {getattr(tp, '__name__', tp)}")


def schema_violations(results: dict) -> list[str]:
    """Where a results file departs from ``lm_eval.result_schema.EvalResults`` (every key it declares)."""
    from lm_eval import result_schema

    ns = vars(result_schema)
    out: list[str] = []
    for key, tp in typing.get_type_hints(result_schema.EvalResults, localns=ns).items():
        if key in results:
            _conforms(results[key], tp, ns, key, out)
    return out


def test_values_are_typed_as_the_harness_s_result_schema(harness_runs, exports):
    """No value of xlt's file departs from the harness's schema where the harness's own file (run A) keeps to it
    (its ``configs`` hold nested task YAML the schema does not type, in both files)."""
    theirs = {v.split(":")[0].split(".")[0] for v in schema_violations(_harness_file(harness_runs, 0))}
    for name in ("belebele", "whole"):
        ours = [v for v in schema_violations(_results_file(exports[name])) if v.split(":")[0].split(".")[0] not in theirs]
        assert not ours, ours
    assert theirs <= {"configs"}, theirs
    results = _results_file(exports["whole"])
    for key in ("git_hash", "lm_eval_version", "total_evaluation_time_seconds"):
        assert isinstance(results[key], str) and results[key], key
    assert float(results["total_evaluation_time_seconds"]) > 0
    assert results["lm_eval_version"].startswith("0.4.13+xlt.")
    for key in ("model_num_parameters", "random_seed", "numpy_seed", "torch_seed", "bootstrap_iters"):
        assert isinstance(results["config"][key], int), key


def test_a_capped_global_mmlu_writes_no_limit_the_harness_would_misread(harness_runs, exports):
    """The harness's --limit caps each task (run A: every task's effective is min(original, 3)); xlt's
    max_questions=5 caps Global-MMLU's language, whose tasks are its subjects: no --limit selects those
    documents, so config.limit is null and the file says why."""
    theirs = _harness_file(harness_runs, 0)
    assert all(n["effective"] == min(n["original"], theirs["config"]["limit"]) for n in theirs["n-samples"].values())
    for name in ("gmmlu", "whole"):
        ours = _results_file(exports[name])
        assert ours["config"]["limit"] is None, name
        assert "global_mmlu" in ours["xlt"]["limit"] and "--limit" in ours["xlt"]["limit"]
        counts = {t: n for t, n in ours["n-samples"].items() if t.startswith("global_mmlu")}
        assert sum(n["effective"] for n in counts.values()) == 5
        assert not any(all(n["effective"] == min(n["original"], cap) for n in ours["n-samples"].values())
                       for cap in range(1, 13))


def test_the_harness_s_own_readers_read_the_export(exports):
    """``lm_eval.utils``'s file helpers, ``make_table`` and the W&B logger (disabled: no network) on xlt's files."""
    from lm_eval.loggers import WandbLogger
    from lm_eval.utils import get_file_task_name, get_sample_results_filenames, make_table

    folder = exports["whole"]
    results = _results_file(folder)
    samples = get_sample_results_filenames([str(p) for p in folder.iterdir()])
    assert {get_file_task_name(Path(f).name) for f in samples} == set(results["configs"])
    table = make_table(results)
    for task, entry in results["results"].items():
        if task in results.get("groups", {}):
            continue
        row = next(line for line in table.splitlines() if line.split("|")[1].strip() == task)
        assert f"{entry['acc,none']:.4f}" in row
    logger = WandbLogger(init_args={"mode": "disabled"})
    logger.post_init(results)
    logger.log_eval_result()
    assert logger._get_config()["cli_configs"] == results["config"]
    for task in results["configs"]:
        assert logger.wandb_results[f"{task}/acc"] == results["results"][task]["acc,none"]
    logger.run.finish()


@pytest.mark.slow  # a set-up of its own (a chat model, one more run of each tool): ~20 s
def test_with_a_chat_template_the_config_is_the_cli_s_too(harness_setup, tmp_path):
    """``lm_eval run ... --apply_chat_template`` (its default ``fewshot_as_multiturn``: true) and xlt's
    ``chat_template=true`` run of the same model and data: ``config`` and the chat fields equal."""
    import shutil

    from omegaconf import OmegaConf

    from tests.fixtures.llm import llm_root_config
    from tests.fixtures.llm.harness_folders import CHAT, run_harness_cli
    from xlt import cli
    from xlt.run.layout import RunDir

    model = tmp_path / "chat_model"
    shutil.copytree(harness_setup["model"], model)
    tok = json.loads((model / "tokenizer_config.json").read_text(encoding="utf-8"))
    (model / "tokenizer_config.json").write_text(json.dumps({**tok, "chat_template": CHAT}), encoding="utf-8")
    run_harness_cli(["--model", "hf", "--model_args", f"pretrained={model}", "dtype=float32", "--tasks",
                     "belebele_eng_Latn", "--num_fewshot", "5", "--batch_size", "4", "--device", "cpu", "--limit", "3",
                     "--apply_chat_template", "--output_path", str(tmp_path / "harness"), "--log_samples"],
                    harness_setup["root"] / "tasks")
    cfg = llm_root_config(
        {"belebele": {"kind": "belebele", "path": str(harness_setup["bele"]), "max_questions": 3,
                      "languages": ["eng_Latn"]}},
        {"model": str(model), "num_fewshot": 5, "batch_size": 4, "dtype": "float32", "device": "cpu",
         "chat_template": True, "harness_output": str(tmp_path / "xlt")})
    cfg.eval.bootstrap_samples = 50
    cli.run_stages(OmegaConf.create(cfg), RunDir(tmp_path / "run"), ["evaluate", "report"])  # the report writes it
    (theirs,) = (tmp_path / "harness").iterdir()
    (ours,) = (tmp_path / "xlt").iterdir()
    theirs, ours = _results_file(theirs), _results_file(ours)
    diffs = {k: (theirs["config"][k], ours["config"][k]) for k in theirs["config"]
             if k not in NOT_COMPARED_CONFIG and theirs["config"][k] != ours["config"].get(k)}
    assert not diffs, diffs
    assert ours["fewshot_as_multiturn"] is True is theirs["fewshot_as_multiturn"]
    for key in ("chat_template", "chat_template_sha", "task_hashes", "n-samples"):
        assert theirs[key] == ours[key], key
