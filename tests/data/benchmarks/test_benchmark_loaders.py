"""Belebele and Global-MMLU loaders on fixtures in the exact upstream schemas and layouts."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest

from tests.fixtures.benchmarks import (
    belebele_gold,
    belebele_rows,
    gmmlu_cs_label,
    gmmlu_gold,
    gmmlu_rows,
    write_belebele,
    write_global_mmlu,
    write_jsonl,
)
from xlt.data.benchmarks import BENCHMARKS, get_benchmark
from xlt.data.benchmarks.global_mmlu import SUBJECT_CATEGORY
from xlt.errors import ConfigError, DataError


def bcfg(path, languages=None, max_questions=None, kind="belebele"):
    return SimpleNamespace(kind=kind, path=str(path), hub_id=None, revision=None, languages=languages,
                           split="test", max_questions=max_questions, enabled=True)


@pytest.mark.parametrize("answer_as_int", [False, True])
def test_belebele_load_maps_gold_and_ids(tmp_path, answer_as_int):
    write_belebele(tmp_path, ["fra_Latn", "zho_Hans"], n=6, answer_as_int=answer_as_int)
    bench = BENCHMARKS["belebele"]
    assert bench.languages(bcfg(tmp_path)) == ["fra_Latn", "zho_Hans"]
    ds = bench.load(bcfg(tmp_path), "zho_Hans")
    assert len(ds) == 6
    assert ds["label"] == [belebele_gold(i) for i in range(6)]
    row = ds[3]
    assert row["id"] == "https://en.wikibooks.org/wiki/Doc_1#2"
    assert row["language"] == "zho_Hans"
    assert row["options"] == [f"[zho_Hans] option {w} 3" for w in ("one", "two", "three", "four")]
    assert row["passage"].startswith("[zho_Hans] Passage 1.")
    assert row["question_number"] == 2 and row["link"].endswith("Doc_1")
    # ids are parallel across languages
    assert bench.load(bcfg(tmp_path), "fra_Latn")["id"] == ds["id"]


def test_belebele_flat_layout_and_max_questions(tmp_path):
    write_belebele(tmp_path, ["deu_Latn"], n=5, flat=True)
    ds = BENCHMARKS["belebele"].load(bcfg(tmp_path, max_questions=2), "deu_Latn")
    assert len(ds) == 2 and ds["label"] == [belebele_gold(0), belebele_gold(1)]


def test_max_questions_is_the_harness_limit_unscorable_ones_among_them_dropped(tmp_path):
    """--limit n takes the first n documents; an unscorable one among them is dropped and counted, and the
    cap is not refilled from further down the file (the harness would not score those)."""
    rows = belebele_rows("fra_Latn", 6)
    for key in ("mc_answer1", "mc_answer2", "mc_answer3", "mc_answer4"):
        rows[1][key] = "same"  # one distinct option: unscorable
    write_jsonl(tmp_path / "data" / "fra_Latn.jsonl", rows)
    bench = BENCHMARKS["belebele"]
    everything = bench.load(bcfg(tmp_path), "fra_Latn")
    ds, checks = bench.load_checked(bcfg(tmp_path, max_questions=3), "fra_Latn")
    assert len(everything) == 5 and len(ds) == 2 and checks["unscorable"] == 1
    assert ds["id"] == [everything["id"][0], everything["id"][1]]  # documents 1 and 3 of the file
    with pytest.raises(DataError, match=r"none of the first 1 items \(max_questions=1\)"):
        rows[0] = rows[1]
        write_jsonl(tmp_path / "data" / "fra_Latn.jsonl", rows)
        bench.load_checked(bcfg(tmp_path, max_questions=1), "fra_Latn")


@pytest.mark.parametrize("bad", ["5", "0", "A", 7, ""])
def test_belebele_answer_outside_1_4_names_file_row_field(tmp_path, bad):
    rows = belebele_rows("fra_Latn", 4)
    rows[2]["correct_answer_num"] = bad if not isinstance(bad, int) else str(bad)
    path = write_jsonl(tmp_path / "data" / "fra_Latn.jsonl", rows)
    with pytest.raises(DataError) as err:
        BENCHMARKS["belebele"].load(bcfg(tmp_path), "fra_Latn")
    msg = str(err.value)
    assert str(path) in msg and "row 3" in msg and "correct_answer_num" in msg


def test_belebele_missing_field(tmp_path):
    rows = belebele_rows("fra_Latn", 3)
    for r in rows:
        del r["mc_answer3"]
    write_jsonl(tmp_path / "data" / "fra_Latn.jsonl", rows)
    with pytest.raises(DataError, match="mc_answer3"):
        BENCHMARKS["belebele"].load(bcfg(tmp_path), "fra_Latn")


def test_belebele_missing_value_in_one_row(tmp_path):
    rows = belebele_rows("fra_Latn", 3)
    del rows[1]["question"]
    write_jsonl(tmp_path / "data" / "fra_Latn.jsonl", rows)
    with pytest.raises(DataError, match=r"fra_Latn\.jsonl:line 2: missing field 'question'"):
        BENCHMARKS["belebele"].load(bcfg(tmp_path), "fra_Latn")


def test_unknown_language_suggests_closest(tmp_path):
    write_belebele(tmp_path, ["fra_Latn", "deu_Latn"], n=2)
    bench = BENCHMARKS["belebele"]
    with pytest.raises(ConfigError, match="did you mean 'fra_Latn'"):
        bench.select_languages(bcfg(tmp_path, languages=["fra_Latm"]))
    with pytest.raises(ConfigError, match="empty language selection"):
        bench.select_languages(bcfg(tmp_path, languages=[]))
    assert bench.select_languages(bcfg(tmp_path, languages=["deu_Latn"])) == ["deu_Latn"]
    with pytest.raises(ConfigError, match="no languages"):
        bench.select_languages(bcfg(tmp_path / "data" / "nothing"), available=[])
    with pytest.raises(ConfigError, match="unknown benchmark kind"):
        get_benchmark("belebel")


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_global_mmlu_load(tmp_path, fmt):
    write_global_mmlu(tmp_path, ["fr", "zh"], n=8, fmt=fmt)
    bench = BENCHMARKS["global_mmlu"]
    cfg = bcfg(tmp_path, kind="global_mmlu")
    assert bench.languages(cfg) == ["fr", "zh"]
    ds = bench.load(cfg, "fr")
    assert ds["label"] == [gmmlu_gold(i) for i in range(8)]
    assert ds["cultural_sensitivity_label"] == [gmmlu_cs_label(i) for i in range(8)]
    assert ds["is_annotated"] == [gmmlu_cs_label(i) != "-" for i in range(8)]
    row = ds[0]
    assert row["passage"] == "" and row["id"] == row["sample_id"] == "abstract_algebra/test/0"
    assert row["culture"] == ["Western Culture"] and row["required_knowledge"] == ["cultural", "regional"]
    assert ds[2]["culture"] == [] and ds[1]["subject_category"] == "Humanities"
    assert row["options"] == ["[fr] a0", "[fr] b0", "[fr] c0", "[fr] d0"]
    # Belebele-style codes are accepted and mapped; dev split works
    assert bench.select_languages(bcfg(tmp_path, ["fra_Latn"], kind="global_mmlu")) == ["fr"]
    assert len(bench.load(cfg, "fra_Latn", split="dev")) == 6


def test_global_mmlu_bad_answer_and_bad_list(tmp_path):
    rows = gmmlu_rows("de", 4)
    rows[1]["answer"] = "E"
    (tmp_path / "de").mkdir()
    pd.DataFrame(rows).to_parquet(tmp_path / "de" / "test-00000-of-00001.parquet")
    with pytest.raises(DataError, match=r"test-00000-of-00001.parquet: row 2: field 'answer'"):
        BENCHMARKS["global_mmlu"].load(bcfg(tmp_path, kind="global_mmlu"), "de")
    rows = gmmlu_rows("de", 4)
    rows[3]["culture"] = "__import__('os').system('echo hi')"
    pd.DataFrame(rows).to_parquet(tmp_path / "de" / "test-00000-of-00001.parquet")
    with pytest.raises(DataError, match=r"row 4: field 'culture'"):
        BENCHMARKS["global_mmlu"].load(bcfg(tmp_path, kind="global_mmlu"), "de")


def test_global_mmlu_lite_without_subject_columns(tmp_path):
    rows = gmmlu_rows("sw", 6)
    for r in rows:
        del r["subject"], r["subject_category"]
    write_jsonl(tmp_path / "sw" / "test.jsonl", rows)
    ds = BENCHMARKS["global_mmlu_lite"].load(bcfg(tmp_path, kind="global_mmlu_lite"), "sw")
    assert ds["subject"][:2] == ["abstract_algebra", "philosophy"]
    assert ds["subject_category"][:4] == ["STEM", "Humanities", "Social Sciences", "Medical"]


def test_subject_category_table_has_57_subjects():
    from collections import Counter

    assert len(SUBJECT_CATEGORY) == 57
    assert Counter(SUBJECT_CATEGORY.values()) == {"STEM": 19, "Humanities": 13, "Social Sciences": 12,
                                                  "Medical": 7, "Business": 4, "Other": 2}


def test_hub_offline_is_clear_error(monkeypatch):
    from xlt.errors import HubUnavailableError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = SimpleNamespace(kind="belebele", path=None, hub_id=None, revision=None, languages=None,
                          split="test", max_questions=None)
    with pytest.raises(HubUnavailableError, match="facebook/belebele"):
        BENCHMARKS["belebele"].load(cfg, "eng_Latn")


def test_fixture_is_json_lines(tmp_path):
    write_belebele(tmp_path, ["eng_Latn"], n=2)
    lines = (tmp_path / "data" / "eng_Latn.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["correct_answer_num"] == "3"


def test_hub_language_lists_offline_come_from_the_language_table(monkeypatch):
    """Offline, datasets reports a cached dataset's configs as ["default"]; xlt lists the real ones."""
    from xlt import config as xcfg
    from xlt.data.benchmarks import get_benchmark

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = xcfg.validate({"eval": {"benchmarks": {
        "b": {"kind": "belebele", "hub_id": "facebook/belebele"},
        "g": {"kind": "global_mmlu", "hub_id": "CohereLabs/Global-MMLU"},
        "l": {"kind": "global_mmlu_lite", "hub_id": "CohereLabs/Global-MMLU-Lite"},
    }}})
    b = get_benchmark("belebele").languages(cfg.eval.benchmarks.b)
    g = get_benchmark("global_mmlu").languages(cfg.eval.benchmarks.g)
    lite = get_benchmark("global_mmlu_lite").languages(cfg.eval.benchmarks.l)
    assert len(b) == 122 and "ary_Arab" in b
    assert len(g) == 42 and {"fil", "zh", "en"} <= set(g)
    assert len(lite) == 15 and "sw" in lite and "cs" not in lite
