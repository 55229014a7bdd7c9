"""The derived files are the report stage's outputs: the report files it declares, and the harness folder
(``eval.llm.harness_output``), one of its outputs too
(:func:`xlt.reporting.harness.output.write_harness_output`, checked by the stage's check): written beside the report,
asked for after a finished run it reruns the report stage only (the evaluation results are reused), and a folder
that goes missing is written again; read back as a compared system it declares what it is
(:class:`xlt.reporting.run_tables.RunInfo`: ``harness``, ``per_question``)."""

from __future__ import annotations

from omegaconf import OmegaConf

from tests.fixtures.llm import llm_root_config
from xlt import cli
from xlt.reporting.harness.imported import harness_provenance, harness_system
from xlt.reporting.harness.output import harness_output_problems
from xlt.reporting.run_tables import RunInfo
from xlt.run.files import atomic_write_text, remove_path
from xlt.run.layout import RunDir
from xlt.secrets import redact_config


def _config(setup, **llm):
    cfg = llm_root_config(
        {"belebele": {"kind": "belebele", "path": str(setup["bele"]), "max_questions": 2, "languages": ["eng_Latn"]}},
        {"model": str(setup["model"]), "num_fewshot": 1, "batch_size": 4, "dtype": "float32", "device": "cpu", **llm})
    cfg.eval.bootstrap_samples = 20
    return cfg


def _results_files(folder):
    return sorted(folder.glob("*/results_*.json"))


def test_the_harness_folder_is_an_output_of_the_report_stage(harness_setup, tmp_path):
    run = RunDir(tmp_path / "run")
    plain = _config(harness_setup)
    assert cli.run_stages(plain, run, ["evaluate", "report"]) == ["evaluate", "report"]
    assert not run.harness_output.exists()

    wanted = _config(harness_setup, harness_output=True)  # a neutral key: the same inputs, evaluate stays done
    assert harness_output_problems(wanted.eval, run) == [
        "harness/ missing (eval.llm.harness_output: lm-evaluation-harness's output folder of the results)"]
    assert cli.run_stages(wanted, run, ["evaluate", "report"]) == ["report"]
    (first,) = _results_files(run.harness_output)
    assert harness_output_problems(wanted.eval, run) == []
    assert cli.run_stages(wanted, run, ["evaluate", "report"]) == []  # done, and its outputs are there

    remove_path(run.harness_output)  # a derived output gone: the report stage writes it again
    assert cli.run_stages(wanted, run, ["evaluate", "report"]) == ["report"]
    assert [p.name for p in _results_files(run.harness_output)] and first.parent.is_dir()
    for derived in (run.report("html"), run.items_report):  # so does every report file it declares
        derived.unlink()
        assert cli.run_stages(wanted, run, ["evaluate", "report"]) == ["report"] and derived.is_file()

    elsewhere = tmp_path / "harness_elsewhere"  # a folder outside the run directory, named as given
    there = _config(harness_setup, harness_output=str(elsewhere))
    assert harness_output_problems(there.eval, run) == [
        f"{elsewhere}/ missing (eval.llm.harness_output: lm-evaluation-harness's output folder of the results)"]
    assert cli.run_stages(there, run, ["evaluate", "report"]) == ["report"]
    assert _results_files(elsewhere)

    # read back as a compared system: declared as a harness folder with per-question data, the xlt run as neither
    atomic_write_text(run.config, OmegaConf.to_yaml(redact_config(wanted)))
    xlt_run = RunInfo(run.path)
    assert xlt_run.harness is None and xlt_run.per_question
    system = harness_system(run.harness_output, tmp_path / "cmp", [xlt_run])
    assert system.harness == run.harness_output and system.per_question
    assert system.label.startswith("harness:") and system.key != xlt_run.key
    assert list(harness_provenance([xlt_run, system])) == [system.label]  # only the harness folder has one
