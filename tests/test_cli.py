"""The command line as a user runs it: the offline demo end to end, reruns, and clear failures."""

from __future__ import annotations

import json

import pytest

from tests.cli import xlt

BEFORE = ["eval.before_training=true"]  # the report's before_finetuning column, as the real demo has it


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """One full run of `python -m xlt.train +recipe=demo_tiny eval.before_training=true` (shared by the tests
    below)."""
    root = tmp_path_factory.mktemp("runs")
    proc = xlt("xlt.train", "+recipe=demo_tiny", *BEFORE, f"run_root={root}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "demo_tiny" / "default", proc


def test_demo_learns_and_writes_the_report(demo_run):
    run, _ = demo_run
    for stage in ("build_data", "train", "evaluate", "report"):
        assert (run / "stages" / f"{stage}.json").is_file(), f"stage {stage} not marked done"
    eng = json.loads((run / "eval" / "belebele" / "eng_Latn.json").read_text())
    assert eng["n"] == 120
    # The bundled task is learnable: English accuracy clearly above chance (0.25); 46.7-60.8% measured over four
    # seeds and two thread counts (conf/training/demo.yaml).
    assert eng["accuracy"] >= 40.0, eng
    langs = {p.stem for p in (run / "eval" / "belebele").glob("*.json") if p.stem != "plan"}
    assert {"eng_Latn", "fra_Latn", "deu_Latn", "rus_Cyrl", "zho_Hans", "arb_Arab"} <= langs
    gm = {p.stem for p in (run / "eval" / "global_mmlu").glob("*.json") if p.stem != "plan"}
    assert {"en", "fr", "de", "ru", "zh", "ar"} <= gm
    for name in ("report.md", "report.csv", "report.json", "report.tex", "report.html", "config.yaml"):
        assert (run / name).stat().st_size > 0, name
    page = (run / "report.html").read_text()  # self-contained: data and renderer inlined (browser test: tests/reporting)
    assert '<script type="application/json" id="xlt-data">' in page and "zho_Hans" in page
    assert "<script src" not in page and "<link" not in page and 'href="http' not in page
    assert list((run / "plots").glob("*.png"))
    assert (run / "model" / "model.safetensors").is_file()
    card = (run / "model" / "README.md").read_text()
    assert "| belebele | 6 |" in card and "| global_mmlu | 6 |" in card  # filled by the report stage
    report = (run / "report.md").read_text()
    assert "eng_Latn" in report and "CS" in report


def test_demo_card_is_read_by_huggingface_hub_and_push_lists_the_model(demo_run):
    """The card the report stage rewrote (issue 42): huggingface_hub's parser reads back one result per
    (benchmark, language) of report.json, none attributed to a Hub dataset (the demo's copies are local);
    `xlt push --dry-run` lists exactly the model folder's files."""
    from huggingface_hub import ModelCard

    run, _ = demo_run
    card = ModelCard.load(run / "model" / "README.md")
    report = json.loads((run / "report.json").read_text())
    got = {(r.dataset_type, r.dataset_config, r.dataset_split): r.metric_value for r in card.data.eval_results}
    want = {(f"local:{name}", row["language"], "test"): round(row["accuracy"], 2)
            for name, bench in report["benchmarks"].items() for row in bench["per_language"]}
    assert got == want and len(want) == 16  # six Belebele and six Global-MMLU languages, four of XCOPA
    assert card.data.language == ["ar", "de", "en", "fr", "id", "it", "ru", "tr", "zh"]
    assert card.data.base_model is None and card.data.license is None  # the tiny random model has neither
    proc = xlt("xlt", "push", str(run), "--repo-id", "me/demo-tiny", "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)
    assert listing["files"] == ["README.md", "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    assert list(listing["left_out"]) == ["xlt_provenance.json"]


def test_demo_evaluates_the_model_before_fine_tuning_too(demo_run):
    """eval.before_training (the real demo sets it; this run asks for it): the same model untrained, with its own provenance, in
    eval_before/, and a column of the report."""
    run, _ = demo_run
    after = json.loads((run / "eval" / "belebele" / "eng_Latn.json").read_text())
    before = json.loads((run / "eval_before" / "belebele" / "eng_Latn.json").read_text())
    assert before["n"] == after["n"] == 120
    assert before["provenance"]["model"].startswith("untrained:") and before["provenance"]["upstream"] == {}
    assert before["provenance"]["job"] != after["provenance"]["job"]
    # The random tiny model untrained is at chance (25%, SD 4 points over 120 questions); trained >= 40.
    assert before["accuracy"] < 40.0 <= after["accuracy"]
    assert {p.stem for p in (run / "eval_before" / "global_mmlu").glob("*.json") if p.stem != "plan"} == {
        "en", "fr", "de", "ru", "zh", "ar"}
    assert "before_finetuning" in (run / "report.md").read_text()
    assert "before fine-tuning" in (run / "report.html").read_text()
    assert "before_finetuning" in (run / "report.csv").read_text().splitlines()[0]


def test_demo_report_page_works_in_chromium(demo_run, tmp_path):
    """The demo's report.html in headless Chromium: no console errors, a header click sorts, a filter filters."""
    from tests.reporting.browser import chromium, first_column, open_page

    run, _ = demo_run
    with chromium(tmp_path / "profile") as browser:
        page, problems = open_page(browser, run / "report.html")
        names = first_column(page, "belebele-langs")
        assert len(names) == 6 and len(first_column(page, "global_mmlu-langs")) == 6
        page.click("table[data-table='belebele-langs'] th[data-key='name']")
        assert first_column(page, "belebele-langs") == page.evaluate("n => n.slice().sort((a, b) => a.localeCompare(b))", names)
        page.select_option("#tb-belebele-langs select[data-filter='script']", "Latn")
        assert sorted(first_column(page, "belebele-langs", 1)) == ["deu_Latn", "eng_Latn", "fra_Latn"]
        page.screenshot(path=str(tmp_path / "demo_report_html.png"))
        assert problems == []


def test_demo_rerun_skips_finished_stages(demo_run):
    run, _ = demo_run
    marker = (run / "stages" / "train.json").stat().st_mtime_ns
    config = (run / "config.yaml").stat().st_mtime_ns
    proc = xlt("xlt.train", "+recipe=demo_tiny", *BEFORE, f"run_root={run.parent.parent}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("up to date") + proc.stderr.count("up to date") == 4
    assert (run / "stages" / "train.json").stat().st_mtime_ns == marker
    assert (run / "config.yaml").stat().st_mtime_ns == config  # a call that only skips does not rewrite it
    calls = [json.loads(line) for line in (run / "calls.jsonl").read_text().splitlines()]
    assert calls[-1]["ran"] == [] and calls[0]["ran"] == ["build_data", "train", "evaluate", "report"]


def test_misspelled_key_names_the_key(tmp_path):
    proc = xlt("xlt.train", "+recipe=demo_tiny", "training.no_such_key=1", f"run_root={tmp_path}")
    assert proc.returncode != 0
    assert "no_such_key" in proc.stderr
    proc = xlt("xlt.train", "+recipe=demo_tiny", "+training.lerning_rate=1", f"run_root={tmp_path}")
    assert proc.returncode == 2 and "training.lerning_rate" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_real_recipe_offline_fails_fast_and_clearly(tmp_path):
    proc = xlt("xlt.train", "+recipe=xlmr_zeroshot", f"run_root={tmp_path}")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "could not load" in proc.stderr and "HF_HUB_OFFLINE=1" in proc.stderr
    assert "python -m xlt.prefetch +recipe=xlmr_zeroshot" in proc.stderr
    assert not (tmp_path / "xlmr_zeroshot" / "default" / "stages").exists()  # nothing marked done


@pytest.mark.slow  # over 10 s of full runs through the CLI: the slow tier, docs/testing.md
def test_stage_entry_point_reevaluates_the_same_model_with_new_settings(demo_run):
    """`xlt.evaluate` with other evaluation settings works on the trained run (same directory) and
    recomputes only what those settings change. Runs last: it changes the shared demo run."""
    run, _ = demo_run
    root = run.parent.parent
    gm_before = (run / "eval" / "global_mmlu" / "en.json").stat().st_mtime_ns
    proc = xlt("xlt.evaluate", "+recipe=demo_tiny", *BEFORE, "eval.benchmarks.belebele.max_questions=10", f"run_root={root}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    eng = json.loads((run / "eval" / "belebele" / "eng_Latn.json").read_text())
    assert eng["n"] == 10
    assert (run / "eval" / "global_mmlu" / "en.json").stat().st_mtime_ns == gm_before
    proc = xlt("xlt.report", "+recipe=demo_tiny", *BEFORE, "eval.benchmarks.belebele.max_questions=10", f"run_root={root}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "| eng_Latn |" in (run / "report.md").read_text()
