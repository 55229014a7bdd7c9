"""lm-evaluation-harness's output folder both ways, on the tiny Llama's parity set (Belebele eng/fra, Global-MMLU
Full and Lite en, XCOPA it/zh; 5-shot, float32; the harness's float32 run and its folder are shared with
``test_harness_parity.py``: ``harness_f32_run`` in conftest.py):

* the folder xlt writes (``eval.llm.harness_output=true``, written by the report stage, and ``xlt report
  --to-harness``) is the harness's own, field by field, read back with the harness's helpers
  (:func:`tests.fixtures.llm.harness_folders.compare_folders`; what cannot match is listed there, with why);
* ``report --compare`` of the xlt run and the harness's folder: paired difference exactly 0 in every language,
  and the findings' paired test finds nothing between them; ``report --harness`` reports the folder alone;
* damaged, partial, foreign and mismatched harness folders: each a clear error naming the file and the field or
  the task and document, never a traceback.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.fixtures.llm import llm_root_config
from tests.fixtures.llm.harness_folders import NOT_COMPARED, PARITY_MAX_LENGTH, XCOPA, compare_folders
from xlt import cli
from xlt import report as report_cli
from xlt.reporting.harness import format as hf
from xlt.run.files import atomic_write_text
from xlt.run.layout import RunDir
from xlt.secrets import redact_config

lm_eval = pytest.importorskip("lm_eval")
# One xdist worker runs this file and test_harness_parity.py: the harness's run (harness_f32_run) is made once.
pytestmark = pytest.mark.xdist_group("llm_harness_parity")

LANGUAGES = {"belebele": ["eng_Latn", "fra_Latn"], "global_mmlu": ["en"], "global_mmlu_lite": ["en"], "xcopa": ["it", "zh"]}
QUESTIONS = {"belebele": 9, "global_mmlu": 12, "global_mmlu_lite": 12, "xcopa": 8}


def _config(setup, **llm):
    cfg = llm_root_config(
        {"belebele": {"kind": "belebele", "path": str(setup["bele"])},
         "global_mmlu": {"kind": "global_mmlu", "path": str(setup["gmmlu"])},
         "global_mmlu_lite": {"kind": "global_mmlu_lite", "path": str(setup["gmmlu"])},
         "xcopa": {"kind": "xcopa", "path": str(XCOPA), "languages": LANGUAGES["xcopa"]}},
        {"model": str(setup["model"]), "num_fewshot": 5, "max_length": PARITY_MAX_LENGTH, "batch_size": 4,
         "dtype": "float32", "device": "cpu", **llm},
    )
    cfg.eval.bootstrap_samples = 200
    return cfg


@pytest.fixture(scope="module")
def xlt_run(parity_setup, tmp_path_factory):
    """xlt's evaluate and report stages on the parity set with ``eval.llm.harness_output=true``, and the config.yaml the
    entry point writes beside it."""
    cfg = _config(parity_setup, harness_output=True)
    run = RunDir(tmp_path_factory.mktemp("harness_files") / "run")
    cli.run_stages(cfg, run, ["evaluate", "report"])
    atomic_write_text(run.config, OmegaConf.to_yaml(redact_config(cfg)))
    return run


def _model_folder(out: Path) -> Path:
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


def test_the_written_folder_is_the_harness_s_field_by_field(parity_setup, harness_f32_run, xlt_run, tmp_path):
    ours = _model_folder(xlt_run.harness_output)
    assert ours.name == hf.sanitize_model_name(str(parity_setup["model"])) == harness_f32_run["folder"].name
    diffs, counted = compare_folders(harness_f32_run["folder"], ours)
    assert not diffs, "\n".join(diffs)
    # 58 documents, 200 options (each in resps and filtered_resps); every sample field and results field compared but those listed as not comparable
    assert counted["samples"] == 58 and counted["loglikelihoods"] == 2 * 200  # resps and filtered_resps
    assert counted["sample_fields"] == 18 * 13 + 40 * 12  # Belebele's samples also hold acc_norm
    assert counted["results_fields"] > 60 and counted["config_keys"] == 11 * 10 + 9  # + 9 tasks whose choices are letters
    # The tasks are the harness's built-in ones under their own names (read from its task files).
    results = json.loads(next(ours.glob("results_*.json")).read_text(encoding="utf-8"))
    assert set(results["configs"]) == set(parity_setup["tasks"])
    # written at the end of the evaluate stage: its time so far, a string as the harness's tracker writes it
    assert float(results["total_evaluation_time_seconds"]) > 0
    assert {"belebele_eng_Latn", "global_mmlu_full_en_anatomy", "global_mmlu_en_stem", "xcopa_zh"} <= set(results["configs"])
    # The Lite group: lm_eval's own aggregation of the harness's own task results.
    from lm_eval.api.metrics import aggregate_subtask_metrics, pooled_sample_stderr

    theirs = json.loads(next(harness_f32_run["folder"].glob("results_*.json")).read_text(encoding="utf-8"))["results"]
    members = results["group_subtasks"]["global_mmlu_en"]
    assert members == ["global_mmlu_en_humanities", "global_mmlu_en_medical", "global_mmlu_en_stem"]
    sizes = [theirs[t]["sample_len"] for t in members]
    group = results["groups"]["global_mmlu_en"]
    assert group == results["results"]["global_mmlu_en"]
    assert group["acc,none"] == aggregate_subtask_metrics([theirs[t]["acc,none"] for t in members], sizes, True)
    assert group["acc_stderr,none"] == pytest.approx(
        pooled_sample_stderr([theirs[t]["acc_stderr,none"] for t in members], sizes), rel=1e-12)
    assert set(NOT_COMPARED) >= {"date", "git_hash", "pretty_env_info", "lm_eval_version"}
    # `xlt report --to-harness` of the finished run writes the same files.
    assert report_cli.option_main(["--to-harness", str(xlt_run.path), str(tmp_path / "cli")]) == 0
    diffs, _ = compare_folders(ours, _model_folder(tmp_path / "cli"))
    assert not diffs, "\n".join(diffs)


def test_compare_with_the_harness_s_folder_pairs_every_question_at_zero(parity_setup, xlt_run, harness_f32_run, tmp_path):
    from xlt.reporting.compare_runs import compare_runs
    from xlt.reporting.harness.imported import SYSTEMS_DIR
    from xlt.reporting.paired import clear_cache, paired_test
    from xlt.reporting.run_tables import RunInfo, seed_groups
    from xlt.reporting.systems import make_systems

    payload = compare_runs([xlt_run.path, harness_f32_run["output"]], tmp_path / "cmp", samples=200)
    for bench, langs in LANGUAGES.items():
        diffs = payload["benchmarks"][bench]["differences"]
        assert sorted(d["language"] for d in diffs) == langs
        for d in diffs:  # every question paired, and each system right on exactly the same ones
            assert d["n"] == QUESTIONS[bench] and d["diff"] == 0.0 and d["ci_low"] == d["ci_high"] == 0.0
            assert d["significant"] is False
    assert payload["benchmarks"]["global_mmlu"]["rank_changes"] and all(
        c["rank_changes"] == 0 for c in payload["benchmarks"]["global_mmlu"]["rank_changes"])
    assert len(payload["systems"]) == 2  # two systems (never one seed group), shown with the folder's model
    prov = payload["harness_systems"][payload["runs"][1]]
    assert prov["model"] == str(parity_setup["model"]) and prov["model_args"]["dtype"] == "float32"
    assert prov["sample_logs"] is True and prov["lm_eval_version"] == lm_eval.__version__
    assert "Systems read from lm-evaluation-harness output folders" in (tmp_path / "cmp" / "compare.md").read_text()
    # The findings' paired test between the two systems: nothing to find.
    (written,) = (tmp_path / "cmp" / SYSTEMS_DIR).iterdir()  # the harness folder as the comparison read it
    harness = RunInfo(written)
    harness.key = "harness"
    a, b = make_systems(seed_groups([RunInfo(xlt_run.path), harness]))
    clear_cache()
    for bench, langs in LANGUAGES.items():
        test = paired_test(a, bench, b, bench, langs, 200, 0)
        assert test["diff"] == 0.0 and test["questions"] == QUESTIONS[bench] * len(langs) and not test["significant"]


def test_report_of_a_harness_folder_alone(harness_f32_run, tmp_path):
    assert report_cli.option_main(["--harness", str(harness_f32_run["output"]), "--out", str(tmp_path / "rep"),
                                   "--bootstrap-samples", "100"]) == 0
    report = json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))
    theirs = json.loads(next(harness_f32_run["folder"].glob("results_*.json")).read_text(encoding="utf-8"))["results"]
    rows = {r["language"]: r for r in report["benchmarks"]["belebele"]["per_language"]}
    assert rows["fra_Latn"]["accuracy"] == pytest.approx(100 * theirs["belebele_fra_Latn"]["acc,none"])
    assert rows["fra_Latn"]["n"] == 9 and rows["fra_Latn"]["script"] == "Latn"
    assert report["provenance"]["harness"]["model_args"]["dtype"] == "float32"
    assert "by resource level" in (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")


def _edit_json(path: Path, fn) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    fn(data)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def _edit_sample(folder: Path, task: str, line: int, fn) -> None:
    f = next(folder.glob(f"samples_{task}_*.jsonl"))
    rows = f.read_text(encoding="utf-8").splitlines()
    row = json.loads(rows[line])
    fn(row)
    rows[line] = json.dumps(row, ensure_ascii=False)
    f.write_text("\n".join(rows) + "\n", encoding="utf-8")


def _results(folder: Path) -> Path:
    return next(folder.glob("results_*.json"))


def _samples(folder: Path, task: str) -> Path:
    return next(folder.glob(f"samples_{task}_*.jsonl"))


def _rename_language(folder: Path) -> None:
    """belebele_fra_Latn logged as belebele_deu_Latn: a language the xlt run's data does not have."""
    def edit(data):
        for key in ("results", "n-samples", "configs", "versions", "n-shot", "higher_is_better"):
            data[key]["belebele_deu_Latn"] = data[key].pop("belebele_fra_Latn")
    _edit_json(_results(folder), edit)
    f = _samples(folder, "belebele_fra_Latn")
    f.rename(f.with_name(f.name.replace("fra_Latn", "deu_Latn")))


def _rehash(row):
    row["doc"]["question"] = row["doc"]["question"] + " (revised)"
    row["doc_hash"] = hf.doc_hash(row["doc"])


DAMAGE = {
    "results file truncated": (lambda f: _results(f).write_text(_results(f).read_text()[:500]), ["results_", "not JSON"]),
    "results without 'results'": (lambda f: _edit_json(_results(f), lambda d: d.pop("results")),
                                  ["field 'results' missing"]),
    "acc,none not a number": (lambda f: _edit_json(_results(f), lambda d: d["results"]["xcopa_it"].update({"acc,none": "n/a"})),
                              ["results.xcopa_it.acc,none", "not a number"]),
    "samples line truncated": (lambda f: _samples(f, "xcopa_zh").write_text(_samples(f, "xcopa_zh").read_text()[:-40]),
                               ["samples_xcopa_zh_", "line 8", "not JSON"]),
    "samples file short": (lambda f: _samples(f, "belebele_eng_Latn").write_text(
        "\n".join(_samples(f, "belebele_eng_Latn").read_text().splitlines()[:-2]) + "\n"),
        ["samples_belebele_eng_Latn_", "7 samples", "9 documents"]),
    "document edited": (lambda f: _edit_sample(f, "belebele_eng_Latn", 3, lambda r: r["doc"].update(question="Edited?")),
                        ["line 4", "belebele_eng_Latn", "document 3", "doc_hash"]),
    "acc edited": (lambda f: _edit_sample(f, "global_mmlu_full_en_anatomy", 0, lambda r: r.update(acc=1.0 - r["acc"])),
                   ["global_mmlu_full_en_anatomy", "document 0", "field 'acc'"]),
    "results of another run": (lambda f: _edit_json(_results(f), lambda d: d["results"]["xcopa_it"].update({"acc,none": 0.125})),
                               ["results.xcopa_it.acc,none", "samples", "different runs"]),
    "sample logs partly missing": (lambda f: _samples(f, "xcopa_it").unlink(), ["sample logs of 1 task(s) missing",
                                                                                "samples_xcopa_it_", "partial"]),
    "foreign results": (lambda f: _edit_json(_results(f), lambda d: d.update(results={"arc_easy": {"acc,none": 0.5}})),
                        ["arc_easy", "foreign results file"]),
    "another data revision": (lambda f: _edit_sample(f, "belebele_fra_Latn", 2, _rehash),
                              ["task belebele_fra_Latn", "document 2", "field 'question'", "another data revision"]),
    "a language the run's data lacks": (_rename_language, ["task belebele_deu_Latn", "language 'deu_Latn'",
                                                           "not in the belebele data"]),
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_or_mismatched_harness_folder_is_a_clear_error(kind, xlt_run, harness_f32_run, tmp_path, capsys):
    damage, expected = DAMAGE[kind]
    copy = tmp_path / "harness"
    shutil.copytree(harness_f32_run["output"], copy)
    damage(_model_folder(copy))
    status = report_cli.option_main(["--compare", str(xlt_run.path), str(copy), "--out", str(tmp_path / "cmp"),
                                     "--bootstrap-samples", "50"])
    err = capsys.readouterr().err
    assert status != 0 and "xlt: error:" in err and "Traceback" not in err, err
    for part in expected:
        assert part in err, f"{kind}: {part!r} not in {err!r}"
    assert not (tmp_path / "cmp" / "compare.md").exists()


def test_what_is_not_the_harness_s_computation_is_refused(parity_setup):
    from xlt.config import validate
    from xlt.errors import ConfigError
    from xlt.reporting.harness.export import refusal

    assert refusal(_config(parity_setup).eval) is None
    generate = _config(parity_setup, mode="generate", num_fewshot=0)
    assert "mode=generate" in refusal(generate.eval)
    with pytest.raises(ConfigError, match="harness_output"):
        validate(OmegaConf.merge(generate, {"eval": {"llm": {"harness_output": True}}}), ["evaluate"])
    with pytest.raises(ConfigError, match="use false, true"):
        validate(OmegaConf.merge(_config(parity_setup), {"eval": {"llm": {"harness_output": 3}}}), ["evaluate"])


def test_a_folder_without_sample_logs_reports_what_needs_no_question(xlt_run, harness_f32_run, tmp_path):
    from xlt.reporting.compare_runs import compare_runs

    copy = tmp_path / "harness"
    shutil.copytree(harness_f32_run["output"], copy)
    for f in _model_folder(copy).glob("samples_*.jsonl"):
        f.unlink()
    payload = compare_runs([xlt_run.path, copy], tmp_path / "cmp", samples=100)
    label = payload["runs"][1]
    assert payload["without_per_question_data"] == [label]
    assert [s["system"] for s in payload["systems"]] == [payload["runs"][0]]  # the findings' systems
    for bench, langs in LANGUAGES.items():
        entry = payload["benchmarks"][bench]
        for row in entry["side_by_side"]:  # the accuracy per language: the harness's acc,none, pooled
            assert row[label] == pytest.approx(row[payload["runs"][0]], abs=1e-9)
        assert [d["n"] for d in entry["differences"]] == [0] * len(langs)
        assert all("no per-question data" in d["note"] for d in entry["differences"])
    md = (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")
    assert "Systems without per-question data" in md and "sample logs" in md
    assert report_cli.option_main(["--harness", str(copy), "--out", str(tmp_path / "rep"),
                                   "--bootstrap-samples", "50"]) == 0
    report = json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))
    xcopa = {r["language"]: r for r in report["benchmarks"]["xcopa"]["per_language"]}
    assert xcopa["it"]["n"] == 8 and xcopa["it"]["chance"] == 50.0
