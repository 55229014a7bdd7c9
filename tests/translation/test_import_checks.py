"""Imported translations (translate.import_dir) are checked: FLORES-200 codes, never the source
language, duplicate rows dropped and counted, bytes that are not UTF-8 named with file and line."""

from __future__ import annotations

import json

import pytest
from datasets import load_from_disk

from tests.translation.conftest import english_rows, make_cfg
from xlt.errors import DataError
from xlt.stages import call_stage


def _write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_the_source_language_is_refused(tmp_path, run):
    _write_jsonl(tmp_path / "imp" / "fra_Latn.jsonl", english_rows(3, "train"))
    _write_jsonl(tmp_path / "imp" / "eng_Latn.jsonl", english_rows(3, "train"))
    with pytest.raises(DataError, match=r"eng_Latn is the source language.*remove or rename"):
        call_stage("translate", make_cfg(import_dir=str(tmp_path / "imp"), languages=[]), run)
    assert not (run.data / "translated").exists() or not any((run.data / "translated").glob("*_*"))


@pytest.mark.parametrize(("code", "hint"), [("fr", "'fra_Latn'"), ("xx_Fake", "not a FLORES-200 code"),
                                            ("fra_latn", "FLORES-200")])
def test_codes_that_are_not_flores_200_are_refused(tmp_path, run, code, hint):
    _write_jsonl(tmp_path / "imp" / f"{code}.jsonl", english_rows(3, "train"))
    with pytest.raises(DataError) as err:
        call_stage("translate", make_cfg(import_dir=str(tmp_path / "imp"), languages=[]), run)
    assert f"'{code}' is not a FLORES-200 code" in str(err.value) and hint in str(err.value)


def test_duplicate_rows_are_dropped_and_counted(tmp_path, run):
    rows = english_rows(4, "train") + english_rows(2, "dev")
    rows = rows + rows[:3] + [rows[4]]  # three train rows and one dev row twice
    _write_jsonl(tmp_path / "imp" / "fra_Latn.jsonl", rows)
    summary = call_stage("translate", make_cfg(import_dir=str(tmp_path / "imp"), languages=["fra_Latn"]), run)
    assert summary["rows"] == {"fra_Latn": {"train": 4, "dev": 2}}
    assert load_from_disk(str(run.translated_language("fra_Latn")))["train"].num_rows == 4
    report = json.loads((run.data / "translation_report.json").read_text())["languages"]["fra_Latn"]
    assert report["counts"]["duplicate_rows"] == 4
    assert report["rows"] == {"train": {"in": 7, "out": 4}, "dev": {"in": 3, "out": 2}}
    assert "dropped: duplicate rows" in (run.data / "translation_report.md").read_text()


def test_bytes_that_are_not_utf8_are_named_with_file_and_line(tmp_path, run):
    path = tmp_path / "imp" / "fra_Latn.jsonl"
    _write_jsonl(path, english_rows(3, "train"))
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"question": "', b'"question": "\xe9t\xe9 ')  # Latin-1, not UTF-8
    path.write_bytes(b"".join(lines))
    with pytest.raises(DataError, match=r"fra_Latn.jsonl, line 2: bytes that are not UTF-8"):
        call_stage("translate", make_cfg(import_dir=str(tmp_path / "imp"), languages=["fra_Latn"]), run)
