"""report.html and compare.html in a real browser: headless Chromium (Debian's ``chromium``, driven by
playwright with ``executable_path``; never playwright's own browser download) loads each page from disk.

The pages are built from a paper-sized synthetic set: 122 Belebele variants x 10 runs (and Global-MMLU's
42 languages). Each test asserts no console errors, that clicking a header reorders the rows, that a
filter changes the rows shown, and saves a screenshot (under the session's temporary folder, printed;
also into ``$XLT_SCREENSHOTS`` when set, e.g. ``XLT_SCREENSHOTS=docs/img`` for those of README.md and docs/evaluation.md).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.reporting.browser import first_column, open_page
from tests.reporting.fake_runs import paper_like_set, write_item_runs
from xlt import config as xcfg
from xlt import languages as langtab
from xlt.reporting.compare_runs import compare_runs
from xlt.reporting.html import render_page, run_page, write_run_page
from xlt.reporting.tables import load_run_results


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    runs = paper_like_set(root / "runs")
    with pytest.MonkeyPatch.context() as mp:  # the PNG of 1,220 bars (20 s here) is not part of the page
        mp.setattr("xlt.reporting.compare_runs.comparison_plot", lambda *a, **k: None)
        compare_runs(runs, root / "cmp", samples=100)
    cfg = xcfg.validate({"recipe_name": "xlmr_zeroshot", "model": {"name": "xlmr_base",
                                                                  "name_or_path": "FacebookAI/xlm-roberta-base"}})
    prov = {"stage": "report", "inputs": "3f2a9c", "upstream": {"evaluate": "e41b"}, "xlt_version": "0.1.0",
            "model": {"sha256": "ab12"}, "data": {"belebele": "hub:facebook/belebele@main"}}
    report = write_run_page(runs[0] / "report.html", cfg.eval, cfg.model, load_run_results(runs[0]), prov,
                            ["belebele: Data checks: 0 odd item(s) in the benchmark files; 0 prediction(s) were argmax ties."],
                            recipe_name=cfg.recipe_name, seed=cfg.seed)
    shots = root / "screenshots"
    shots.mkdir()
    return {"report": report, "compare": root / "cmp" / "compare.html", "shots": shots}


def save_shot(page, pages, name: str) -> Path:
    out = pages["shots"] / name
    page.screenshot(path=str(out))
    print(f"screenshot: {out}")
    if os.environ.get("XLT_SCREENSHOTS"):
        dest = Path(os.environ["XLT_SCREENSHOTS"])
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(out, dest / name)
    assert out.stat().st_size > 10_000
    return out


def test_report_page_sorts_filters_and_shows_intervals(browser, pages):
    page, problems = open_page(browser, pages["report"])
    table = "belebele-langs"
    names = first_column(page, table)
    assert len(names) == 122
    page.click(f"table[data-table='{table}'] th[data-key='name']")  # sort by language name (ascending)
    by_name = first_column(page, table)
    assert by_name != names
    assert by_name == page.evaluate("names => names.slice().sort((a, b) => a.localeCompare(b))", names)
    page.click(f"table[data-table='{table}'] th[data-key='name']")  # again: descending
    assert first_column(page, table) == by_name[::-1]
    cyrl = sum(1 for c in langtab.codes() if langtab.lookup(c).script == "Cyrl")
    page.select_option(f"#tb-{table} select[data-filter='script']", "Cyrl")
    assert len(first_column(page, table)) == cyrl == 9
    page.fill(f"#tb-{table} input[data-search]", "ukrain")
    assert first_column(page, table) == ["Ukrainian"]
    assert "of 122 rows" in page.text_content(f"#tb-{table} .count")
    # Global-MMLU: full / MA / CS / CA and the HT/MT split, filterable
    gm = "global_mmlu-langs"
    assert len(first_column(page, gm)) == 42
    page.select_option(f"#tb-{gm} select[data-filter='translation']", "machine")
    assert len(first_column(page, gm)) == sum(1 for c in langtab.gmmlu_codes() if langtab.lookup(c).translation == "machine")
    # hovering a bar shows language, accuracy and interval
    page.hover("#ch-belebele-bars rect.bar >> nth=0")
    tip = page.text_content("#tip")
    assert page.is_visible("#tip") and "accuracy" in tip and "[" in tip and "(" in tip
    page.select_option(f"#tb-{table} select[data-filter='script']", "")
    page.fill(f"#tb-{table} input[data-search]", "")
    page.click(f"table[data-table='{table}'] th[data-key='accuracy']")  # numeric: best first
    accs = [float(x.split()[0]) for x in first_column(page, table, 5)]
    assert accs == sorted(accs, reverse=True) and accs[0] > accs[-1]
    page.evaluate("document.getElementById('tb-belebele-langs').scrollIntoView()")
    save_shot(page, pages, "report_html.png")
    assert problems == []
    page.close()


def test_compare_page_with_ten_runs(browser, pages):
    page, problems = open_page(browser, pages["compare"])
    assert page.locator(".finding").count() == 9
    assert page.locator(".finding.holds").count() >= 1
    # every verdict shows the paper's sentence beside it (quoted, or marked as a paraphrase)
    quotes = page.locator(".finding .quote").all_inner_texts()
    assert len(quotes) == 9 and all(q.startswith("The paper: ") for q in quotes)
    assert any("\u201cWe also observe that larger vocabulary size" in q for q in quotes)
    # the DOM stays small enough for 122 languages x 10 runs
    assert page.evaluate("document.getElementsByTagName('*').length") < 40_000
    sbs = "belebele-sbs"
    codes = first_column(page, sbs, 1)
    assert len(codes) == 122
    page.click(f"table[data-table='{sbs}'] th[data-key='xlmr_zeroshot/default']")  # by the baseline, best first
    ordered = first_column(page, sbs, 1)
    assert ordered != codes and sorted(ordered) == sorted(codes)
    page.select_option(f"#tb-{sbs} select[data-filter='resource']", "low")
    low = sum(1 for c in langtab.codes() if langtab.resource_level(c) == "low")
    assert len(first_column(page, sbs)) == low
    # differences against the baseline: significant ones marked
    assert page.locator("table[data-table='belebele-diff'] td.sig").count() > 0
    assert "★" in page.text_content("table[data-table='belebele-diff'] td.sig >> nth=0")
    # the bar chart switches runs
    before = page.get_attribute("#ch-belebele-accbars rect.bar >> nth=0", "height")
    page.select_option("#ch-belebele-accbars select", "9")
    assert page.get_attribute("#ch-belebele-accbars rect.bar >> nth=0", "height") != before
    ranked = page.eval_on_selector_all("table[data-table='global_mmlu-ranks'] tbody tr",
                                       "rows => rows.filter(r => r.cells[2].textContent !== '').length")
    assert ranked == 4  # the seed groups evaluated on Global-MMLU (XLM-R base x3 seeds, XLM-V, InfoXLM, XLM-R large)
    page.select_option(f"#tb-{sbs} select[data-filter='resource']", "")
    page.evaluate("window.scrollTo(0, 0)")
    save_shot(page, pages, "compare_html.png")
    assert problems == []
    page.close()


def test_item_report_shows_the_planted_error_side_by_side(browser, tmp_path):
    """The constructed runs with one swapped gold label (tests/reporting/fake_runs.py): the compare page lists
    it first, with its passage, question and options in Arabic (right to left) beside English; the texts'
    markup (``<b>``, ``<script>``) shows as text, never as elements."""
    paths, _ = write_item_runs(tmp_path / "runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("xlt.reporting.compare_runs.comparison_plot", lambda *a, **k: None)
        compare_runs(paths, tmp_path / "cmp", samples=50)
    page, problems = open_page(browser, tmp_path / "cmp" / "compare.html")
    rows = page.eval_on_selector_all("table[data-table='belebele-suspects'] tbody tr",
                                     "rows => rows.map(r => [r.cells[0].textContent, r.cells[1].textContent])")
    assert rows[0] == ["https://x.example/p7#1", "arb_Arab"] and len(rows) == 3
    first = page.locator("#app .item >> nth=0")
    assert first.get_attribute("data-item") == "https://x.example/p7#1"
    sides = first.locator(".side")
    assert sides.count() == 2
    assert [sides.nth(k).get_attribute("dir") for k in range(2)] == ["rtl", "ltr"]
    assert [sides.nth(k).get_attribute("lang") for k in range(2)] == ["arb_Arab", "eng_Latn"]
    arabic = sides.nth(0)
    assert page.evaluate("e => getComputedStyle(e).direction", arabic.element_handle()) == "rtl"
    assert "ما الذي اشتراه <b>7</b>?" in arabic.locator(".question").text_content()
    assert "<script>alert(1)</script>" in arabic.locator(".passage").text_content()
    assert page.locator("#app .item b, #app .item script").count() == 0  # markup in the data stays text
    assert arabic.locator("li.gold").text_content().startswith("arb_Arab option 0 of 7")
    assert sides.nth(1).locator("li.gold").text_content().startswith("eng_Latn option 3 of 7")
    assert arabic.locator(".picked").text_content().count(": option 4") == 3  # each system's pick, beside the key
    first.scroll_into_view_if_needed()
    out = tmp_path / "items.png"
    page.screenshot(path=str(out))
    assert out.stat().st_size > 10_000
    assert problems == []
    page.close()


def test_inlined_strings_cannot_break_out_of_the_page(tmp_path):
    evil = "</script><script>alert(1)</script><!-- & \u2028"
    html = render_page({"title": evil, "meta": [[evil, evil]], "notes": [evil], "sections": [
        {"title": evil, "blocks": [{"type": "text", "text": evil}]}]})
    assert html.count("</script>") == 2  # the JSON block's and the renderer's, nothing from the data
    assert "<script>alert" not in html and "&lt;/script&gt;" in html.split("<body>")[0]


def test_run_page_lists_provenance_and_notes(pages):
    cfg = xcfg.validate({})
    results = load_run_results(pages["report"].parent)
    page = run_page(cfg.eval, cfg.model, results, None, ["belebele: not comparable"], pages["report"].parent,
                    recipe_name=cfg.recipe_name, seed=cfg.seed)
    assert page["notes"] == ["belebele: not comparable"]
    rows = page["sections"][0]["blocks"][0]["rows"]
    assert rows[0] == ["provenance", "not recorded"]  # the report stage's record; then each benchmark's results'
    assert ["belebele: scored model fingerprint", '{"sha": "m"}'] in rows
    assert any(k.startswith("global_mmlu: data") and v == "hub:fake" for k, v in rows)
    titles = [s["title"] for s in page["sections"]]
    assert titles == ["provenance", "Belebele", "Global-MMLU"]
