"""MCScript2.0 loader on the original XML (plain file, release zip, folder)."""

from __future__ import annotations

import zipfile

import pytest

from xlt.config.data import SourceConfig
from xlt.data.sources.mcscript import MCScript
from xlt.errors import DataError

T, F = True, False


def _instances(up):
    return [
        ("p1", "I went to the shop. I bought milk.", [
            ("0", "Where did they go?", [("the shop", T), ("the zoo", F)]),
            ("1", "What was bought?", [("milk", T), ("bread", F)]),
            ("2", "Who paid?", [("me", T), ("the shop", F)]),  # sibling answer "the shop" must not repeat
        ]),
        ("p2", "We baked a cake.", [("0", "What was baked?", [("a cake", T), ("a pie", F)])]),  # single question
        ("p3", up.sentences(26), [("0", "Long?", [("yes", T), ("no", F)])]),
        ("p4", "Odd.", [("0", "Two right?", [("x", T), ("y", T)])]),
    ]


def _check(out, stats):
    train = out["train"]
    assert [r["question_id"] for r in train] == ["p1-0", "p1-1", "p1-2", "p2-0"]
    for r in train:
        assert len(set(r["options"])) == 4 and r["dataset"] == "MCScript2.0" and r["split"] == "train"
    by_id = {r["question_id"]: r for r in train}
    q2 = by_id["p1-2"]
    assert q2["options"][q2["label"]] == "me"
    assert set(q2["options"]) - {"me", "the shop"} <= {"the zoo", "milk", "bread"}
    q0 = by_id["p1-0"]
    assert set(q0["options"]) - {"the shop", "the zoo"} <= {"milk", "bread", "me"}
    single = by_id["p2-0"]
    assert single["options"][single["label"]] == "a cake"
    # Its distractors come from the pool of correct answers of the other kept passages.
    assert set(single["options"]) - {"a cake", "a pie"} <= {"the shop", "milk", "me"}
    assert stats.dropped["train"] == {"not_exactly_one_correct": 1, "passage_too_long": 1}
    assert stats.notes["questions_with_distractors_from_global_pool"] == 1
    assert out == {"train": train} and stats.kept == {"train": 4}


def test_mcscript_xml_file(upstream, tmp_path, ctx):
    xml = tmp_path / "train-data.xml"
    xml.write_text(upstream.mcscript_xml(_instances(upstream)))
    out, stats = MCScript(SourceConfig(path=str(xml))).load(ctx)
    _check(out, stats)
    again, _ = MCScript(SourceConfig(path=str(xml))).load(ctx)
    assert again == out


def test_mcscript_release_zip_in_folder(upstream, tmp_path, ctx):
    (tmp_path / "rel").mkdir()
    with zipfile.ZipFile(tmp_path / "rel" / "MCScript-2.0.zip", "w") as z:
        z.writestr("MCScript2.0/train-data.xml", upstream.mcscript_xml(_instances(upstream)))
    out, stats = MCScript(SourceConfig(path=str(tmp_path / "rel"))).load(ctx)
    _check(out, stats)


def test_mcscript_bad_xml(tmp_path, ctx):
    xml = tmp_path / "train-data.xml"
    xml.write_text('<data>\n<instance id="1"><text>Hi.</text>\n<questions><question id="0" text="Q">\n</data>\n')
    with pytest.raises(DataError, match=r"train-data\.xml:line 4: invalid XML"):
        MCScript(SourceConfig(path=str(xml))).load(ctx)


def test_mcscript_missing_attribute(tmp_path, ctx):
    xml = tmp_path / "train-data.xml"
    xml.write_text('<data><instance id="7"><text>Hi.</text><questions><question id="3" text="Q?">'
                   '<answer id="0" text="a"/><answer id="1" text="b" correct="False"/></question>'
                   "</questions></instance></data>")
    with pytest.raises(DataError, match="instance 7 question 3: missing attribute 'correct'"):
        MCScript(SourceConfig(path=str(xml))).load(ctx)
