"""MCTest loader on local copies in the sagnikrayc/mctest mc500 schema."""

from __future__ import annotations

import pytest

from xlt.config.data import SourceConfig
from xlt.data.sources.mctest import MCTest, strip_prefix
from xlt.errors import DataError

OPTS = ["Fries", "Pudding", "James", "Jane"]
STORY = "James the Turtle was always in trouble.\\newline\\newlineOne day he went to town. He ate pudding."


def test_strip_prefix_first_colon_only():
    assert strip_prefix("multiple: What did he say: yes or no?") == "What did he say: yes or no?"
    assert strip_prefix("one: Who is James?") == "Who is James?"
    assert strip_prefix("Time: when did it happen?") == "Time: when did it happen?"


def test_mctest_rules(upstream, tmp_path, ctx):
    train = [
        upstream.mctest_row("mc500.train.0.q0", STORY, "one: What is the turtle's name?", OPTS, "C"),
        upstream.mctest_row("mc500.train.0.q1", STORY, "multiple: What did James say: yes or no?", OPTS, "A"),
        upstream.mctest_row("mc500.train.1.q0", upstream.sentences(27), "one: Why?", OPTS, "B"),
    ]
    dev = [upstream.mctest_row("mc500.dev.0.q0", STORY, "one: Who?", OPTS, "D")]
    upstream.write_jsonl(tmp_path / "mctest", "train", train)
    upstream.write_jsonl(tmp_path / "mctest", "validation", dev)
    out, stats = MCTest(SourceConfig(path=str(tmp_path / "mctest"))).load(ctx)
    r0, r1 = out["train"]
    assert r0["question"] == "What is the turtle's name?" and r0["label"] == 2 and r0["options"] == OPTS
    assert r1["question"] == "What did James say: yes or no?"
    assert "\\newline" not in r0["passage"] and "trouble.\n\nOne day" in r0["passage"]
    assert r0["passage_id"] == r1["passage_id"] and r0["question_id"] == "mc500.train.0.q0"
    assert r0["dataset"] == "MCTest_500"
    assert stats.dropped["train"] == {"passage_too_long": 1}
    assert out["dev"][0]["label"] == 3 and out["dev"][0]["split"] == "dev"


def test_mctest_bad_answer_letter(upstream, tmp_path, ctx):
    rows = [upstream.mctest_row("i", STORY, "one: Q?", OPTS, "a")]
    upstream.write_jsonl(tmp_path / "mctest", "train", rows)
    upstream.write_jsonl(tmp_path / "mctest", "validation", rows)
    with pytest.raises(DataError, match=r"train\.jsonl:line 1: field 'answer' must be an answer letter A-D"):
        MCTest(SourceConfig(path=str(tmp_path / "mctest"))).load(ctx)


def test_mctest_missing_option(upstream, tmp_path, ctx):
    row = upstream.mctest_row("i", STORY, "one: Q?", OPTS, "A")
    del row["answer_options"]["D"]
    upstream.write_jsonl(tmp_path / "mctest", "train", [row])
    upstream.write_jsonl(tmp_path / "mctest", "validation", [row])
    with pytest.raises(DataError, match=r"line 1: field 'answer_options.D' must be a string"):
        MCTest(SourceConfig(path=str(tmp_path / "mctest"))).load(ctx)
