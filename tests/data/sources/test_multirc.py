"""MultiRC loader on local copies in the aps/super_glue multirc schema (one row per option)."""

from __future__ import annotations

import pytest

from xlt.config.data import SourceConfig
from xlt.data.sources.multirc import MultiRC, strip_markup
from xlt.errors import DataError


def test_strip_markup():
    text, sents = strip_markup("<b>Sent 1: </b>Tom ran.<br><b>Sent 2: </b>He fell, e.g. hard.<br>")
    assert text == "Tom ran. He fell, e.g. hard." and len(sents) == 2


def _copy(up, tmp_path):
    para = up.multirc_markup(["Tom has a red ball.", "He plays with Ann.", "They go home."])
    long_para = up.multirc_markup([f"Line {i} is here." for i in range(26)])
    rows = []
    # q1: exactly 4 options, one correct -> kept in upstream order
    rows += up.multirc_rows(0, 1, para, "What colour is the ball?", [("blue", 0), ("red", 1), ("green", 0), ("pink", 0)])
    # q2: two correct options -> dropped
    rows += up.multirc_rows(0, 2, para, "Who plays?", [("Tom", 1), ("Ann", 1), ("Bob", 0), ("Sue", 0)], 4)
    # q3: only three options -> dropped
    rows += up.multirc_rows(0, 3, para, "Where do they go?", [("home", 1), ("school", 0), ("park", 0)], 8)
    # q4: six options -> 4 sampled incl. the correct one
    six = [("one", 0), ("two", 0), ("three", 1), ("four", 0), ("five", 0), ("six", 0)]
    rows += up.multirc_rows(0, 4, para, "Which number?", six, 11)
    # q5: long passage (26 sentences) -> dropped
    rows += up.multirc_rows(1, 5, long_para, "What?", [("a", 1), ("b", 0), ("c", 0), ("d", 0)], 17)
    # q6: no correct option -> dropped
    rows += up.multirc_rows(1, 6, para, "Why?", [("a", 0), ("b", 0), ("c", 0), ("d", 0)], 21)
    # Interleave another question's rows between q1's rows: grouping is by idx, not by adjacency.
    rows = rows[:2] + rows[-4:] + rows[2:-4]
    dev = up.multirc_rows(9, 1, para, "What colour is the ball?", [("blue", 0), ("red", 1), ("green", 0), ("pink", 0)])
    up.write_parquet(tmp_path / "multirc" / "multirc", "train", rows)
    up.write_parquet(tmp_path / "multirc" / "multirc", "validation", dev)
    return tmp_path / "multirc"


def test_multirc_regrouping_rules_and_counts(upstream, tmp_path, ctx):
    path = _copy(upstream, tmp_path)
    out, stats = MultiRC(SourceConfig(path=str(path), config_name="multirc")).load(ctx)
    train = out["train"]
    assert [r["question_id"] for r in train] == ["0-1", "0-4"]
    q1, q4 = train
    assert q1["options"] == ["blue", "red", "green", "pink"] and q1["label"] == 1
    assert q1["passage"] == "Tom has a red ball. He plays with Ann. They go home."
    assert "<b>" not in q1["passage"]
    assert len(q4["options"]) == 4 and q4["options"][q4["label"]] == "three"
    assert set(q4["options"]) <= {"one", "two", "three", "four", "five", "six"}
    assert stats.read == {"train": 25, "dev": 4}
    assert stats.candidates == {"train": 6, "dev": 1}
    assert stats.dropped["train"] == {"fewer_than_4_options": 1, "not_exactly_one_correct": 2, "passage_too_long": 1}
    assert stats.kept == {"train": 2, "dev": 1}
    # The 6-option sample is seeded by (seed, source, split, question): rebuilding gives the same one,
    # and some other seed gives another.
    again, _ = MultiRC(SourceConfig(path=str(path), config_name="multirc")).load(ctx)
    assert again["train"][1]["options"] == q4["options"]
    samples = set()
    for seed in range(10):
        ctx.seed = seed
        o, _ = MultiRC(SourceConfig(path=str(path), config_name="multirc")).load(ctx)
        samples.add(tuple(o["train"][1]["options"]))
    assert len(samples) > 1


def test_multirc_question_without_option_text_is_dropped_and_counted(upstream, tmp_path, ctx):
    rows = upstream.multirc_rows(0, 1, "<b>Sent 1: </b>Hi.<br>", "Q?", [("", 1), ("b", 0), ("c", 0), ("d", 0)])
    upstream.write_jsonl(tmp_path / "m", "train", rows)
    upstream.write_jsonl(tmp_path / "m", "validation", rows)
    out, stats = MultiRC(SourceConfig(path=str(tmp_path / "m"))).load(ctx)
    assert out["train"] == [] and stats.dropped["train"] == {"empty_option": 1}
    assert stats.repaired["train"] == {"empty_option_skipped": 1}


def test_multirc_bad_label(upstream, tmp_path, ctx):
    rows = upstream.multirc_rows(0, 1, "<b>Sent 1: </b>Hi.<br>", "Q?", [("a", 1), ("b", 2)])
    upstream.write_jsonl(tmp_path / "m", "train", rows)
    upstream.write_jsonl(tmp_path / "m", "validation", rows)
    with pytest.raises(DataError, match=r"train\.jsonl:line 2: field 'label' must be 0 or 1"):
        MultiRC(SourceConfig(path=str(tmp_path / "m"))).load(ctx)
