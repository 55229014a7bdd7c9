"""A harness output folder as users fill it (``xlt/reporting/harness/read.py``, ``imported.py``): three runs of
lm-evaluation-harness's own command line into one ``--output_path`` (the ``harness_runs`` fixture: A Belebele
eng/fra, B Belebele fra and XCOPA it, C HellaSwag from an ``lm_eval --config`` file kept in the folder). Every
results file is read, each task from the newest file holding it (as the harness's own per-task logic of its Hub
card keeps each task's latest), tasks xlt does not know and files that are not the harness's are named, never
fatal, and ``report --compare`` / ``--harness`` read the folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

lm_eval = pytest.importorskip("lm_eval")


def _latest_per_task(folder: Path) -> dict[str, str]:
    """Each task's latest sample-log date, by the harness's own helpers and rule
    (``EvaluationTracker.recreate_metadata_card``: the max of ``get_file_datetime`` per ``get_file_task_name``)."""
    from lm_eval.utils import get_file_datetime, get_file_task_name, get_sample_results_filenames

    latest: dict[str, str] = {}
    for f in get_sample_results_filenames([str(p) for p in folder.iterdir()]):
        task, date = get_file_task_name(Path(f).name), get_file_datetime(Path(f).name)
        latest[task] = max(latest.get(task, ""), date)
    return latest


def test_every_results_file_is_read_each_task_from_its_newest(harness_runs):
    from xlt.reporting.harness import format as hf
    from xlt.reporting.harness.read import read_folder

    a, b, c = harness_runs["results"]
    folder = read_folder(harness_runs["output"])
    latest = _latest_per_task(harness_runs["folder"])
    assert set(latest) == {"belebele_eng_Latn", "belebele_fra_Latn", "xcopa_it", "hellaswag"}
    # Belebele eng only in the oldest file (A), fra in A and B (B wins), XCOPA in B; HellaSwag (C, the newest) named
    assert set(folder.tasks) == {"belebele_eng_Latn", "belebele_fra_Latn", "xcopa_it"}
    for name, task in folder.tasks.items():
        assert hf.file_date(task.results_file.name) == latest[name], name
        assert task.samples_file is not None and hf.file_date(task.samples_file.name) == latest[name]
        run = a if name == "belebele_eng_Latn" else b
        assert task.acc == run["results"][name]["acc,none"] and task.n == run["n-samples"][name]["effective"]
    assert folder.tasks["belebele_eng_Latn"].n == 3 and folder.tasks["belebele_fra_Latn"].n == 4
    assert folder.ignored == ["hellaswag"]
    assert folder.ignored_files == ["config.yaml"]
    by_file = folder.tasks_by_file()
    assert [sorted(v) for v in by_file.values()] == [["belebele_fra_Latn", "xcopa_it"], ["belebele_eng_Latn"]]
    prov = folder.provenance()
    assert prov["results_files"] == by_file and set(prov["settings_by_file"]) == set(by_file)
    assert [s["limit"] for s in prov["settings_by_file"].values()] == [4.0, 3.0]
    assert prov["n_shot"] == [5] and [s["n_shot"] for s in prov["settings_by_file"].values()] == [[5], [5]]
    # the harness's own get_latest_filename picks C, which holds no task xlt knows: read alone it is foreign
    from lm_eval.utils import get_latest_filename, get_results_filenames

    newest = get_latest_filename(get_results_filenames([str(p) for p in harness_runs["folder"].iterdir()]))
    assert set(json.loads(Path(newest).read_text(encoding="utf-8"))["results"]) == {"hellaswag"}


def test_compare_and_report_read_the_folder_beside_its_config_file(harness_runs, xlt_harness_run, tmp_path):
    from xlt import report as report_cli
    from xlt.reporting.compare_runs import compare_runs
    from xlt.reporting.harness.read import is_harness_folder

    out = harness_runs["output"]
    assert (out / "config.yaml").is_file() and is_harness_folder(out)
    assert not is_harness_folder(xlt_harness_run["run"].path)
    payload = compare_runs([xlt_harness_run["run"].path, out], tmp_path / "cmp", samples=50)
    label = payload["runs"][1]
    diffs = {d["language"]: d for d in payload["benchmarks"]["belebele"]["differences"]}
    assert set(diffs) == {"eng_Latn", "fra_Latn"} and diffs["eng_Latn"]["n"] == 3 and diffs["fra_Latn"]["n"] == 3
    assert "xcopa" in payload["benchmarks"]  # from the older run B, beside xlt's benchmarks
    prov = payload["harness_systems"][label]
    assert prov["ignored_tasks"] == ["hellaswag"] and prov["ignored_files"] == ["config.yaml"]
    md = (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")
    for part in ("config.yaml", "hellaswag", "tasks by results file", *prov["results_files"]):
        assert part in md, part
    assert report_cli.option_main(["--harness", str(out), "--out", str(tmp_path / "rep"),
                                   "--bootstrap-samples", "50"]) == 0
    report = json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))
    rows = {r["language"]: r for r in report["benchmarks"]["belebele"]["per_language"]}
    assert rows["eng_Latn"]["n"] == 3 and rows["fra_Latn"]["n"] == 4
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "tasks by results file" in md and "config.yaml" in md
