"""The bad-input corpus: corrupted and quirky inputs through every loader, each with its exact outcome.

The anomaly policy (xlt/data/anomalies.py, docs/training-set.md, "Anomaly policy") has two classes of outcome, and each
case below asserts one of them:

* ``Err(cls, pattern)``: the *file is wrong*; a DataError/ConfigError whose message matches ``pattern``
  (which names the file, the 1-based line/row and the field);
* ``Count(kind, key, n)``: a *row is odd*; the build goes on and the row is dropped (``dropped``),
  repaired (``repaired``) or noted (``notes``) and counted under ``key``, or, for a benchmark, counted
  in the language's data checks (``checks``).

Loader functions are called directly (fast); a handful of cases go through the CLI at the end.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.cli import xlt
from tests.fixtures.benchmarks import belebele_rows, gmmlu_rows, write_global_mmlu
from tests.fixtures.sources import upstream as up
from xlt.config.data import SourceConfig
from xlt.data.benchmarks import BENCHMARKS
from xlt.data.sources import SOURCES, BuildContext
from xlt.errors import ConfigError, DataError


@dataclass(frozen=True)
class Err:
    cls: type[Exception]
    pattern: str


@dataclass(frozen=True)
class Count:
    kind: str  # dropped | repaired | notes | checks
    key: str
    n: int = 1


# ---- training sources --------------------------------------------------------------------------------

GOOD_RACE = up.race_row("high1.txt", "Tom has a dog. It is big.", "What does Tom have?", ["a dog", "a cat", "a cow", "a pig"], "A")


def race(**changes: Any) -> dict[str, Any]:
    row = json.loads(json.dumps(GOOD_RACE))
    row.update(changes)
    return row


def race_opts(*options: Any) -> dict[str, Any]:
    return race(options=list(options))


def write_race(tmp: Path, train: bytes | list[dict], fmt: str = "jsonl") -> tuple[str, Path]:
    folder = tmp / "race"
    folder.mkdir(parents=True, exist_ok=True)
    up.write_jsonl(folder, "validation", [GOOD_RACE])
    if isinstance(train, bytes):
        path = folder / ("train.jsonl" if fmt == "jsonl" else "train-00000-of-00001.parquet")
        path.write_bytes(train)
    elif fmt == "parquet":
        path = up.write_parquet(folder, "train", train)
    else:
        path = up.write_jsonl(folder, "train", train)
    return "race", folder


def jsonl_bytes(*rows: Any) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def parquet_bytes(tmp: Path, rows: list[dict]) -> bytes:
    return up.write_parquet(tmp / "scratch", "x", rows, name="x.parquet").read_bytes()


def empty_parquet(tmp: Path) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp / "empty.parquet"
    pq.write_table(pa.table({k: pa.array([], pa.string()) for k in GOOD_RACE}), path)
    return path.read_bytes()


def race_case(train: Callable[[Path], bytes | list[dict]] | bytes | list[dict], fmt: str = "jsonl"):
    def setup(tmp: Path):
        return write_race(tmp, train(tmp) if callable(train) else train, fmt)

    return setup


def write_source(name: str, train: list[dict] | bytes, dev: list[dict] | None = None, filename: str = "train.jsonl"):
    def setup(tmp: Path):
        folder = tmp / name
        folder.mkdir(parents=True, exist_ok=True)
        if isinstance(train, bytes):
            (folder / filename).write_bytes(train)
        else:
            up.write_jsonl(folder, "train", train)
        up.write_jsonl(folder, "validation", dev if dev is not None else (train if isinstance(train, list) else []))
        return name, folder

    return setup


def write_reclor(train: bytes):
    def setup(tmp: Path):
        folder = tmp / "reclor"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "train.json").write_bytes(train)
        good = up.reclor_row("v0", "C.", "Q?", ["a", "b", "c", "d"], 0)
        (folder / "val.json").write_text(json.dumps([good]))
        return "reclor", folder

    return setup


def write_mcscript(xml: bytes | str, folder_only: bool = False):
    def setup(tmp: Path):
        folder = tmp / "mcscript"
        folder.mkdir(parents=True, exist_ok=True)
        if folder_only:
            return "mcscript", folder
        path = folder / "train-data.xml"
        path.write_bytes(xml.encode() if isinstance(xml, str) else xml)
        return "mcscript", path

    return setup


def sciq(**changes: Any) -> dict[str, Any]:
    row = up.sciq_row("What is water?", "H2O", ["CO2", "O2", "NaCl"], "Water is H2O. It is wet.")
    row.update(changes)
    return row


MRC_PARA = up.multirc_markup(["Tom has a red ball.", "He plays with Ann."])


def mrc(options: list[tuple[Any, int]], question: Any = "What colour?", pid: int = 0, qid: int = 1) -> list[dict]:
    return up.multirc_rows(pid, qid, MRC_PARA, question, options)


MRC_OK = [("blue", 0), ("red", 1), ("green", 0), ("pink", 0)]


def mctest(**changes: Any) -> dict[str, Any]:
    row = up.mctest_row("mc500.train.0", "Tom ran.\\newlineAnn sat.", "one: Who ran?", ["Tom", "Ann", "Bob", "Sue"], "A")
    row.update(changes)
    return row


def reclor(**changes: Any) -> dict[str, Any]:
    row = up.reclor_row("train_0", "All cats purr.", "Which follows?", ["a", "b", "c", "d"], 0)
    row.update(changes)
    return row


def xml(answers: list[tuple[str, bool]], question: str = "Where?") -> str:
    return up.mcscript_xml([("p1", "I went to the shop.", [("0", question, answers), ("1", "What?", [("milk", True), ("tea", False)])]),
                            ("p2", "We baked.", [("0", "Baked?", [("cake", True), ("pie", False)]),
                                                 ("1", "Then?", [("ate it", True), ("sold it", False)])])])


LONG = "x" * 200_001
T = "train"

SOURCE_CASES: list[tuple[str, Callable[[Path], tuple[str, Path]], Err | Count]] = [
    # -- the file is wrong: RACE JSONL --
    ("jsonl_empty_file", race_case(b""), Err(DataError, r"train\.jsonl: no rows \(the file is empty\)")),
    ("jsonl_blank_lines_only", race_case(b"\n\n  \n"), Err(DataError, r"train\.jsonl: no rows")),
    ("jsonl_truncated_last_line", race_case(jsonl_bytes(GOOD_RACE, GOOD_RACE) + b'{"example_id": "hi'),
     Err(DataError, r"train\.jsonl:line 3: invalid or truncated JSON .*looks truncated")),
    ("jsonl_invalid_line", race_case(jsonl_bytes(GOOD_RACE) + b"{not json}\n"), Err(DataError, r"train\.jsonl:line 2: invalid or truncated JSON")),
    ("jsonl_non_utf8_line", race_case(jsonl_bytes(GOOD_RACE) + json.dumps(GOOD_RACE).replace("Tom", "T\u00f6m").encode("latin-1") + b"\n"),
     Err(DataError, r"train\.jsonl:line 2: undecodable bytes .*not UTF-8")),
    ("jsonl_utf16_file", race_case(jsonl_bytes(GOOD_RACE).decode().encode("utf-16")), Err(DataError, r"train\.jsonl:line 1: undecodable bytes")),
    ("jsonl_line_is_array", race_case(b"[1, 2]\n"), Err(DataError, r"train\.jsonl:line 1: expected a JSON object, got list")),
    ("jsonl_renamed_column", race_case([{("passage" if k == "article" else k): v for k, v in GOOD_RACE.items()}]),
     Err(DataError, r"train\.jsonl:line 1: missing field 'article'.*renamed")),
    ("jsonl_options_not_list", race_case([race(options="a dog")]), Err(DataError, r"train\.jsonl:line 1: field 'options' must be a list of strings")),
    ("jsonl_three_options", race_case([race_opts("a", "b", "c")]), Err(DataError, r"train\.jsonl:line 1: field 'options' must hold 4 options, got 3")),
    ("jsonl_option_not_string", race_case([race_opts("a", "b", 3, "d")]), Err(DataError, r"train\.jsonl:line 1: field 'options\[2\]' must be a string")),
    ("jsonl_answer_letter_E", race_case([race(), race(answer="E")]), Err(DataError, r"train\.jsonl:line 2: field 'answer' must be an answer letter")),
    ("jsonl_answer_int", race_case([race(answer=1)]), Err(DataError, r"train\.jsonl:line 1: field 'answer' must be str")),
    ("jsonl_article_int_throughout", race_case([race(article=5), race(article=6)]), Err(DataError, r"train\.jsonl:line 1: field 'article' must be str")),
    # -- the file is wrong: RACE Parquet (rows numbered from 1) --
    ("parquet_garbage", race_case(b"PAR1 this is not parquet", "parquet"), Err(DataError, r"train-00000-of-00001\.parquet: not a readable Parquet file")),
    ("parquet_truncated", race_case(lambda t: parquet_bytes(t, [GOOD_RACE] * 3)[:-40], "parquet"), Err(DataError, r"\.parquet: not a readable Parquet file")),
    ("parquet_empty", race_case(empty_parquet, "parquet"), Err(DataError, r"\.parquet: no rows")),
    ("parquet_missing_column", race_case([{k: v for k, v in GOOD_RACE.items() if k != "question"}], "parquet"),
     Err(DataError, r"\.parquet:row 1: missing field 'question'")),
    ("parquet_bad_answer_row_3", race_case([race(), race(), race(answer="Q")], "parquet"), Err(DataError, r"\.parquet:row 3: field 'answer'")),
    # -- the file is wrong: other sources --
    ("sciq_missing_distractor", write_source("sciq", [{k: v for k, v in sciq().items() if k != "distractor3"}]),
     Err(DataError, r"train\.jsonl:line 1: missing field 'distractor3'")),
    ("sciq_answer_not_string", write_source("sciq", [sciq(correct_answer=7)]), Err(DataError, r"train\.jsonl:line 1: field 'correct_answer' must be str")),
    ("multirc_label_2", write_source("multirc", mrc([("a", 1), ("b", 2)])), Err(DataError, r"train\.jsonl:line 2: field 'label' must be 0 or 1")),
    ("multirc_label_string", write_source("multirc", mrc([("a", "1")])), Err(DataError, r"train\.jsonl:line 1: field 'label' must be int")),
    ("multirc_idx_without_question", write_source("multirc", [{**mrc(MRC_OK)[0], "idx": {"paragraph": 0}}]),
     Err(DataError, r"train\.jsonl:line 1: field 'idx\.question' is missing")),
    ("multirc_idx_not_struct", write_source("multirc", [{**mrc(MRC_OK)[0], "idx": 3}]), Err(DataError, r"train\.jsonl:line 1: field 'idx' must be a struct")),
    ("mctest_option_D_missing", write_source("mctest", [mctest(answer_options={"A": "a", "B": "b", "C": "c"})]),
     Err(DataError, r"train\.jsonl:line 1: field 'answer_options\.D' must be a string")),
    ("mctest_answer_Z", write_source("mctest", [mctest(answer="Z")]), Err(DataError, r"train\.jsonl:line 1: field 'answer' must be an answer letter")),
    ("mctest_options_list", write_source("mctest", [mctest(answer_options=["a", "b", "c", "d"])]),
     Err(DataError, r"train\.jsonl:line 1: field 'answer_options' must be a struct")),
    ("reclor_truncated_array", write_reclor(json.dumps([reclor(), reclor()], indent=1).encode()[:-30]),
     Err(DataError, r"train\.json:line \d+: invalid or truncated JSON")),
    ("reclor_object_not_array", write_reclor(b'{"context": "x"}'), Err(DataError, r"train\.json:line 1: missing field 'question'")),
    ("reclor_array_of_strings", write_reclor(b'["a", "b"]'), Err(DataError, r"train\.json:line 1 \(item 1\): expected a JSON object")),
    ("reclor_empty_array", write_reclor(b"[]"), Err(DataError, r"train\.json: no rows")),
    ("reclor_empty_file", write_reclor(b""), Err(DataError, r"train\.json: no rows")),
    ("reclor_label_4_on_line_3", write_reclor(("[\n" + json.dumps(reclor()) + ",\n" + json.dumps(reclor(label=4)) + "\n]").encode()),
     Err(DataError, r"train\.json:line 3 \(item 2\): field 'label' must be 0-3")),
    ("reclor_non_utf8", write_reclor(b'[\n{"context": "caf\xe9"}\n]'), Err(DataError, r"train\.json:line 2: undecodable bytes")),
    ("mcscript_invalid_xml", write_mcscript("<data><instance id='1'>\n<text>x</text>\n</data>"), Err(DataError, r"train-data\.xml:line 3: invalid XML")),
    ("mcscript_correct_maybe", write_mcscript(xml([("a", True), ("b", False)]).replace('correct="False"', 'correct="maybe"', 1)),
     Err(DataError, r"question 0: field 'answer@correct' must be True or False")),
    ("mcscript_question_without_text", write_mcscript(xml([("a", True), ("b", False)]).replace(' text="Where?"', "")),
     Err(DataError, r"instance p1 question 0: missing attribute 'text'")),
    ("mcscript_folder_without_xml", write_mcscript("", folder_only=True), Err(DataError, r"no train-data\.xml \(or release zip\)")),
    ("mcscript_no_instances", write_mcscript("<data></data>"), Err(DataError, r"data\.sources\.mcscript: the source is enabled but .* yielded 0 rows")),
    ("source_path_missing", lambda t: ("race", t / "nowhere"), Err(DataError, r"local copy .*nowhere does not exist")),
    ("source_split_file_missing", lambda t: ("race", (t / "race").mkdir() or t / "race"), Err(DataError, r"no file for split 'train'")),
    # -- a row is odd: dropped and counted --
    ("empty_passage", race_case([race(), race(article="")]), Count("dropped", "empty_passage")),
    ("whitespace_passage", race_case([race(), race(article=" \n\t ")]), Count("dropped", "empty_passage")),
    ("empty_question", race_case([race(), race(question="")]), Count("dropped", "empty_question")),
    ("whitespace_question", race_case([race(), race(question="   ")]), Count("dropped", "empty_question")),
    ("empty_option", race_case([race(), race_opts("a", "", "c", "d")]), Count("dropped", "empty_option")),
    ("whitespace_option", race_case([race(), race_opts("a", "b", "  ", "d")]), Count("dropped", "empty_option")),
    ("duplicate_options", race_case([race(), race_opts("a", "b", "a", "d")]), Count("dropped", "duplicate_options")),
    ("duplicate_after_crlf_repair", race_case([race(), race_opts("a\r\nb", "a\nb", "c", "d")]), Count("dropped", "duplicate_options")),
    ("placeholder_nan", race_case([race(), race_opts("a", "nan", "c", "d")]), Count("dropped", "placeholder_option")),
    ("placeholder_NaN", race_case([race(), race_opts("NaN", "b", "c", "d")]), Count("dropped", "placeholder_option")),
    ("placeholder_null", race_case([race(), race_opts("a", "b", "null", "d")]), Count("dropped", "placeholder_option")),
    ("null_passage", race_case([race(), race(article=None)]), Count("dropped", "null_field")),
    ("null_question", race_case([race(), race(question=None)]), Count("dropped", "null_field")),
    ("null_option", race_case([race(), race_opts("a", None, "c", "d")]), Count("dropped", "null_field")),
    ("null_options_list", race_case([race(), race(options=None)]), Count("dropped", "null_field")),
    ("absurd_passage", race_case([race(), race(article=LONG)]), Count("dropped", "field_too_long")),
    ("absurd_option", race_case([race(), race_opts("a", "b", "c", "y" * 20_001)]), Count("dropped", "field_too_long")),
    ("absurd_question", race_case([race(), race(question="q" * 20_001)]), Count("dropped", "field_too_long")),
    ("null_in_parquet", race_case([race(), race(article=None)], "parquet"), Count("dropped", "null_field")),
    # -- a row is odd: repaired and counted (row kept) --
    ("stray_bom_in_passage", race_case([race(article="\ufeffTom has a dog.")]), Count("repaired", "bom")),
    ("crlf_in_passage", race_case([race(article="Tom has a dog.\r\nIt is big.")]), Count("repaired", "crlf")),
    ("lone_cr_in_option", race_case([race_opts("a\rb", "b", "c", "d")]), Count("repaired", "crlf")),
    ("option_text_None_kept", race_case([race_opts("None", "b", "c", "d")]), Count("notes", "option_text_None")),
    # A BOM at the start of the file is its encoding signature: accepted by every reader (no repair needed).
    ("bom_at_file_start", race_case(b"\xef\xbb\xbf" + jsonl_bytes(GOOD_RACE)), Count("dropped", "_none_", 0)),
    ("crlf_line_ends_in_file", race_case(jsonl_bytes(GOOD_RACE).replace(b"\n", b"\r\n")), Count("dropped", "_none_", 0)),
    # -- a row is odd: other sources --
    ("sciq_empty_support", write_source("sciq", [sciq(), sciq(support="")]), Count("dropped", "empty_support")),
    ("sciq_null_support", write_source("sciq", [sciq(), sciq(support=None)]), Count("dropped", "null_field")),
    ("sciq_duplicate_distractors", write_source("sciq", [sciq(), sciq(distractor1="O2")]), Count("dropped", "duplicate_options")),
    ("multirc_empty_wrong_options_repaired", write_source("multirc", mrc([("", 0), *MRC_OK, ("", 0)])), Count("repaired", "empty_option_skipped", 2)),
    ("multirc_empty_correct_option", write_source("multirc", mrc([("", 1), ("a", 0), ("b", 0), ("c", 0)])), Count("dropped", "empty_option")),
    ("multirc_empty_question", write_source("multirc", mrc(MRC_OK, question="")), Count("dropped", "empty_question")),
    ("multirc_null_answer", write_source("multirc", mrc([(None, 0), *MRC_OK])), Count("dropped", "null_field")),
    ("mctest_empty_story", write_source("mctest", [mctest(), mctest(story="")]), Count("dropped", "empty_passage")),
    ("mctest_duplicate_options", write_source("mctest", [mctest(answer_options=dict(zip("ABCD", ["x", "x", "y", "z"], strict=True)))]),
     Count("dropped", "duplicate_options")),
    ("mctest_crlf_story", write_source("mctest", [mctest(story="Tom ran.\r\nAnn sat.")]), Count("repaired", "crlf")),
    ("reclor_empty_context", write_source("reclor", [reclor(), reclor(context="")]), Count("dropped", "empty_passage")),
    ("reclor_placeholder_answer", write_source("reclor", [reclor(), reclor(answers=["a", "nan", "c", "d"])]), Count("dropped", "placeholder_option")),
    ("reclor_absurd_context", write_source("reclor", [reclor(), reclor(context=LONG)]), Count("dropped", "field_too_long")),
    ("mcscript_empty_answer", write_mcscript(xml([("", True), ("b", False)])), Count("dropped", "empty_option")),
    ("mcscript_empty_question", write_mcscript(xml([("a", True), ("b", False)], question=" ")), Count("dropped", "empty_question")),
    ("mcscript_two_correct", write_mcscript(xml([("a", True), ("b", True)])), Count("dropped", "not_exactly_one_correct")),
]


def run_source(tmp: Path, setup: Callable[[Path], tuple[str, Path]]):
    name, path = setup(tmp)
    return SOURCES[name](SourceConfig(path=str(path))).load(BuildContext(seed=3))


@pytest.mark.parametrize(("setup", "expected"), [c[1:] for c in SOURCE_CASES], ids=[c[0] for c in SOURCE_CASES])
def test_source_bad_input(tmp_path, setup, expected):
    if isinstance(expected, Err):
        with pytest.raises(expected.cls, match=expected.pattern) as err:
            run_source(tmp_path, setup)
        assert str(tmp_path) in str(err.value) or "data.sources" in str(err.value)
        return
    out, stats = run_source(tmp_path, setup)
    counts = {"dropped": stats.dropped.get(T, {}), "repaired": stats.repaired.get(T, {}), "notes": stats.notes}
    got = counts[expected.kind]
    if expected.n == 0:  # accepted as is: nothing dropped or repaired
        assert not stats.dropped.get(T) and not stats.repaired.get(T) and out[T]
        return
    assert got.get(expected.key) == expected.n, counts
    # Nothing is kept silently: every candidate question is either kept or counted as dropped.
    assert stats.kept[T] + sum(stats.dropped.get(T, {}).values()) == stats.candidates[T]
    if expected.kind in ("repaired", "notes"):
        assert out[T], "a repaired row is kept"
        for rec in out[T]:
            text = json.dumps(rec)
            assert "\\r" not in text and "\\ufeff" not in text


def test_multirc_real_layout_with_empty_options_builds_and_counts(tmp_path):
    """aps/super_glue multirc Parquet: a question with 6 options, 2 of them empty (wrong), keeps 4 real ones."""
    rows = mrc([("", 0), ("blue", 0), ("red", 1), ("", 0), ("green", 0), ("pink", 0), ("grey", 0)])
    rows += mrc([("one", 1), ("", 0), ("two", 0), ("three", 0)], question="How many?", qid=2)
    folder = tmp_path / "super_glue" / "multirc"
    up.write_parquet(folder, "train", rows)
    up.write_parquet(folder, "validation", mrc(MRC_OK))
    out, stats = SOURCES["multirc"](SourceConfig(path=str(tmp_path / "super_glue"), config_name="multirc")).load(BuildContext())
    (q,) = out[T]
    assert "" not in q["options"] and q["options"][q["label"]] == "red" and len(set(q["options"])) == 4
    assert stats.repaired[T] == {"empty_option_skipped": 3}
    assert stats.dropped[T] == {"fewer_than_4_options": 1}
    # The original SuperGLUE release (one JSON line per passage) reads the same.
    line = {"idx": 0, "version": 1.1, "passage": {"text": MRC_PARA, "questions": [
        {"idx": 1, "question": "What colour?", "answers": [{"idx": i, "text": t, "label": lab} for i, (t, lab) in
                                                          enumerate([("", 0), ("blue", 0), ("red", 1), ("green", 0), ("pink", 0)])]}]}}
    orig = tmp_path / "MultiRC"
    up.write_jsonl(orig, "train", [line])
    up.write_jsonl(orig, "val", [line])
    out2, stats2 = SOURCES["multirc"](SourceConfig(path=str(orig))).load(BuildContext())
    assert out2[T][0]["options"] == ["blue", "red", "green", "pink"] and stats2.repaired[T] == {"empty_option_skipped": 1}


# ---- benchmarks ------------------------------------------------------------------------------------------


def bcfg(path: Path, kind: str = "belebele") -> SimpleNamespace:
    return SimpleNamespace(kind=kind, path=str(path), hub_id=None, revision=None, languages=None, split="test",
                           max_questions=None, enabled=True)


def bele(rows: list[dict] | None = None, raw: bytes | None = None, edit: Callable[[list[dict]], None] | None = None):
    def setup(tmp: Path):
        path = tmp / "bele" / "data" / "fra_Latn.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = rows if rows is not None else belebele_rows("fra_Latn", 6)
        if edit:
            edit(data)
        path.write_bytes(raw if raw is not None else jsonl_bytes(*data))
        return "belebele", tmp / "bele", "fra_Latn"

    return setup


def gm(edit: Callable[[list[dict]], None] | None = None, fmt: str = "parquet", raw: bytes | None = None):
    def setup(tmp: Path):
        root = tmp / "gm"
        write_global_mmlu(root, ["de"], n=8, splits=("test",), fmt=fmt)
        rows = gmmlu_rows("de", 8)
        if edit:
            edit(rows)
        target = root / "de" / ("test-00000-of-00001.parquet" if fmt == "parquet" else "test.jsonl")
        if raw is not None:
            target.write_bytes(raw)
        elif fmt == "parquet":
            import pandas as pd

            pd.DataFrame(rows).to_parquet(target, index=False)
        else:
            target.write_bytes(jsonl_bytes(*rows))
        return "global_mmlu", root, "de"

    return setup


def setitem(i: int, key: str, value: Any) -> Callable[[list[dict]], None]:
    def edit(rows: list[dict]) -> None:
        rows[i][key] = value

    return edit


def delcol(key: str) -> Callable[[list[dict]], None]:
    def edit(rows: list[dict]) -> None:
        for r in rows:
            del r[key]

    return edit


def same_options(rows: list[dict]) -> None:
    for r in rows:
        for k in range(1, 5):
            r[f"mc_answer{k}"] = "same"


def one_unscorable(rows: list[dict]) -> None:
    for k in range(1, 5):
        rows[4][f"mc_answer{k}"] = ""


def duplicate_id(rows: list[dict]) -> None:
    rows[3]["link"], rows[3]["question_number"] = rows[1]["link"], rows[1]["question_number"]


BELE_GOOD = jsonl_bytes(*belebele_rows("fra_Latn", 4))

BENCH_CASES: list[tuple[str, Callable[[Path], tuple[str, Path, str]], Err | Count]] = [
    # -- the file is wrong --
    ("belebele_empty_file", bele(raw=b""), Err(DataError, r"fra_Latn\.jsonl: no rows")),
    ("belebele_truncated_last_line", bele(raw=BELE_GOOD + b'{"link": "https://x'), Err(DataError, r"fra_Latn\.jsonl:line 5: invalid or truncated JSON")),
    ("belebele_non_utf8", bele(raw=BELE_GOOD.replace(b"Question 1", b"Qu\xe9stion 1")), Err(DataError, r"fra_Latn\.jsonl:line 2: undecodable bytes")),
    ("belebele_missing_column", bele(edit=delcol("mc_answer3")), Err(DataError, r"fra_Latn\.jsonl: missing field\(s\) \['mc_answer3'\]")),
    ("belebele_answer_5_row_3", bele(edit=setitem(2, "correct_answer_num", "5")), Err(DataError, r"fra_Latn\.jsonl: row 3: field 'correct_answer_num' must be 1-4")),
    ("belebele_question_number_text", bele(edit=setitem(1, "question_number", "two")),
     Err(DataError, r"fra_Latn\.jsonl: field 'question_number' mixes types \(row 2")),
    ("belebele_null_answer", bele(edit=setitem(2, "correct_answer_num", None)), Err(DataError, r"fra_Latn\.jsonl: row 3: field 'correct_answer_num' is missing")),
    ("belebele_key_absent_in_line_4", bele(edit=lambda rows: rows[3].pop("mc_answer1")), Err(DataError, r"fra_Latn\.jsonl:line 4: missing field 'mc_answer1'")),
    ("gmmlu_null_sample_id", gm(edit=setitem(5, "sample_id", None)), Err(DataError, r"\.parquet: row 6: field 'sample_id' is missing")),
    ("belebele_nothing_scorable", bele(edit=same_options), Err(DataError, r"fra_Latn\.jsonl: none of the 6 items can be scored")),
    ("gmmlu_empty_parquet", gm(edit=lambda rows: rows.clear(), raw=None), Err(DataError, r"test-00000-of-00001\.parquet: (no rows|could not read)")),
    ("gmmlu_missing_answer_column", gm(edit=delcol("answer")), Err(DataError, r"test-00000-of-00001\.parquet: missing field\(s\) \['answer'\]")),
    ("gmmlu_answer_E_row_2", gm(edit=setitem(1, "answer", "E")), Err(DataError, r"\.parquet: row 2: field 'answer' must be a letter A-D")),
    ("gmmlu_corrupt_parquet", gm(raw=b"PAR1garbagePAR1"), Err(DataError, r"test-00000-of-00001\.parquet: could not read as parquet")),
    ("gmmlu_jsonl_truncated", gm(fmt="jsonl", raw=jsonl_bytes(*gmmlu_rows("de", 2)) + b'{"sample_id'), Err(DataError, r"test\.jsonl:line 3: invalid or truncated")),
    ("gmmlu_bad_list_literal", gm(edit=setitem(0, "culture", "['open")), Err(DataError, r"row 1: field 'culture' is not a Python list literal")),
    # -- odd items: kept (or left out when unscorable) and counted --
    ("belebele_duplicate_id", bele(edit=duplicate_id), Count("checks", "duplicate_ids")),
    ("belebele_duplicate_options", bele(edit=setitem(2, "mc_answer2", belebele_rows("fra_Latn", 6)[2]["mc_answer1"])), Count("checks", "duplicate_options")),
    ("belebele_empty_option", bele(edit=setitem(0, "mc_answer4", "")), Count("checks", "empty_options")),
    ("belebele_empty_passage", bele(edit=setitem(5, "flores_passage", " ")), Count("checks", "empty_passages")),
    ("belebele_empty_question", bele(edit=setitem(3, "question", "")), Count("checks", "empty_questions")),
    ("belebele_null_question", bele(edit=setitem(3, "question", None)), Count("checks", "empty_questions")),
    ("belebele_null_option", bele(edit=setitem(1, "mc_answer2", None)), Count("checks", "empty_options")),
    ("gmmlu_null_option", gm(edit=setitem(4, "option_c", None)), Count("checks", "empty_options")),
    ("belebele_placeholder_option", bele(edit=setitem(1, "mc_answer3", "nan")), Count("checks", "placeholder_options")),
    ("belebele_one_unscorable_item", bele(edit=one_unscorable), Count("checks", "unscorable")),
    ("belebele_bom_at_file_start", bele(raw=b"\xef\xbb\xbf" + BELE_GOOD), Count("checks", "_none_", 0)),
    ("gmmlu_empty_question_unscorable", gm(edit=setitem(2, "question", "")), Count("checks", "unscorable")),
    ("gmmlu_duplicate_sample_id", gm(edit=setitem(3, "sample_id", gmmlu_rows("de", 8)[0]["sample_id"])), Count("checks", "duplicate_ids")),
]


@pytest.mark.parametrize(("setup", "expected"), [c[1:] for c in BENCH_CASES], ids=[c[0] for c in BENCH_CASES])
def test_benchmark_bad_input(tmp_path, setup, expected):
    kind, root, lang = setup(tmp_path)
    bench = BENCHMARKS[kind]
    if isinstance(expected, Err):
        with pytest.raises(expected.cls, match=expected.pattern) as err:
            bench.load_checked(bcfg(root, kind), lang)
        assert str(root) in str(err.value)
        return
    ds, checks = bench.load_checked(bcfg(root, kind), lang)
    if expected.n == 0:
        assert not any(checks.values()) and len(ds) == 4
        return
    assert checks[expected.key] == expected.n, checks
    n_rows = 8 if kind == "global_mmlu" else 6
    assert len(ds) == n_rows - checks["unscorable"]  # odd items are kept, only unscorable ones left out


# ---- config: secrets on the command line, eval.model --------------------------------------------------

SECRET_CASES = [
    ("+model.hf_token=hf_abcdefghijklmnopqrstuvwxyz", "model.hf_token"),
    ("logger.api_key=0123456789abcdef", "logger.api_key"),
    ("++logger.wandb_api_key=0123456789abcdef0123456789abcdef01234567", "logger.wandb_api_key"),
    ("+hub.password=hunter2", "hub.password"),
    ("eval.model=hf_abcdefghijklmnopqrstuvwxyz", "eval.model"),  # a token pasted as a value
    ("model.max_length=512", None),
    ("+model.tokenizer=xlm-roberta-base", None),
    ("+llm.add_bos_token=true", None),
    ("~logger.api_key", None),
]


@pytest.mark.parametrize(("override", "key"), SECRET_CASES, ids=[c[0].split("=")[0] for c in SECRET_CASES])
def test_secret_overrides(override, key):
    from xlt.secrets import reject_secret_overrides

    if key is None:
        reject_secret_overrides(["recipe=demo", override])
        return
    with pytest.raises(ConfigError, match=rf"override '{key}=\*\*\*' passes a secret") as err:
        reject_secret_overrides(["recipe=demo", override])
    assert override.split("=", 1)[1] not in str(err.value)  # the secret itself is never echoed


def _model_dir(tmp: Path, kind: str) -> str:
    d = tmp / "m"
    if kind == "missing":
        return "./no/such/model"
    d.mkdir()
    if kind == "file":
        (d / "weights.bin").write_bytes(b"x")
        return str(d / "weights.bin")
    if kind == "bad_config":
        (d / "config.json").write_text("{not json")
    if kind == "no_weights":
        (d / "config.json").write_text(json.dumps({"model_type": "xlm-roberta", "vocab_size": 10}))
    if kind == "run_root":
        (d / "data").mkdir()
    return str(d)


@pytest.mark.parametrize(
    ("kind", "pattern"),
    [
        ("missing", r"eval\.model=\./no/such/model: no such folder"),
        ("empty", r"not a model folder \(no config\.json"),
        ("run_root", r"not a model folder .*\['data'\]"),
        ("file", r"a file, not a model folder"),
        ("bad_config", r"cannot be loaded as a multiple-choice model"),
        ("no_weights", r"cannot be loaded as a multiple-choice model"),
    ],
)
def test_eval_model_not_a_model_folder(tmp_path, kind, pattern):
    from xlt.modeling.load import load_trained

    with pytest.raises(ConfigError, match=pattern) as err:
        load_trained(_model_dir(tmp_path, kind))
    assert "point eval.model at" in str(err.value)


# ---- a handful through the CLI: `xlt: error:` and no traceback ------------------------------------------


def _cli_build(tmp: Path, race_path: Path) -> Any:
    return xlt("xlt.build_data", "+recipe=demo_tiny", f"run_root={tmp / 'runs'}", f"data.sources.race.path={race_path}",
               "data.sources.sciq.enabled=false", timeout=300)


@pytest.mark.parametrize(
    ("train", "pattern"),
    [
        (b"", r"train\.jsonl: no rows"),
        (jsonl_bytes(GOOD_RACE) + b'{"example_id": "h', r"train\.jsonl:line 2: invalid or truncated JSON"),
        (jsonl_bytes(GOOD_RACE) + b'{"article": "caf\xe9"}\n', r"train\.jsonl:line 2: undecodable bytes"),
    ],
    ids=["empty", "truncated", "latin1"],
)
def test_cli_bad_source_file(tmp_path, train, pattern):
    _, folder = write_race(tmp_path, train)
    proc = _cli_build(tmp_path, folder)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert "xlt: error:" in proc.stderr
    import re

    assert re.search(pattern, proc.stderr), proc.stderr[-2000:]


def test_cli_odd_rows_build_and_are_counted(tmp_path):
    _, folder = write_race(tmp_path, [GOOD_RACE, race(article=""), race_opts("a", "nan", "c", "d"), race(question=None)])
    proc = _cli_build(tmp_path, folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = next((tmp_path / "runs").rglob("build_report.json"))
    race_train = json.loads(report.read_text())["sources"]["race"]["splits"]["train"]
    assert race_train["dropped"] == {"empty_passage": 1, "null_field": 1, "placeholder_option": 1}
    assert race_train["kept"] == 1




def _contamination_texts(path: Path, languages: list[str] | None) -> list[str]:
    from omegaconf import OmegaConf

    from xlt.config.eval import BenchmarkConfig
    from xlt.data.benchmarks import get_benchmark

    bcfg = OmegaConf.structured(BenchmarkConfig(kind="belebele", path=str(path), languages=languages))
    return get_benchmark("belebele").contamination_texts(bcfg)


@pytest.mark.parametrize(
    ("raw", "pattern"),
    [
        (BELE_GOOD + b'{"link": "https://x', r"fra_Latn\.jsonl:line 5: invalid or truncated JSON"),
        (BELE_GOOD.replace(b"Question 1", b"Qu\xe9stion 1"), r"fra_Latn\.jsonl:line 2: undecodable bytes"),
        (b"", r"fra_Latn\.jsonl: no rows"),
    ],
    ids=["truncated", "latin1", "empty"],
)
def test_decontamination_reads_benchmarks_through_their_loader(tmp_path, raw, pattern):
    """Decontamination reads a local copy the way evaluation does: the same errors name the same line."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "fra_Latn.jsonl").write_bytes(raw)
    with pytest.raises(DataError, match=pattern):
        _contamination_texts(tmp_path, ["fra_Latn"])


def test_decontamination_accepts_a_bom(tmp_path):
    (tmp_path / "fra_Latn.jsonl").write_bytes(b"\xef\xbb\xbf" + BELE_GOOD)
    texts = _contamination_texts(tmp_path, None)
    rows = belebele_rows("fra_Latn", 4)
    expected = {r["flores_passage"] for r in rows} | {r["question"] for r in rows}
    assert set(texts) == expected and len(texts) == len(expected)  # each text once, no BOM kept
    assert not any(t.startswith("\ufeff") for t in texts)


def test_cli_eval_model_not_a_model_folder(tmp_path):
    (tmp_path / "notamodel").mkdir()
    (tmp_path / "notamodel" / "notes.txt").write_text("hi")
    proc = xlt("xlt.evaluate", "+recipe=demo_tiny", f"run_root={tmp_path / 'runs'}", f"eval.model={tmp_path / 'notamodel'}",
               timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert "xlt: error: eval.model=" in proc.stderr and "not a model folder" in proc.stderr
