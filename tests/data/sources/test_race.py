"""RACE loader on local copies in the ehovy/race schema."""

from __future__ import annotations

import json

import pytest

from xlt.config.data import SourceConfig
from xlt.data.sources.race import Race
from xlt.errors import DataError

OPTS = ["a cat", "a dog", "a bird", "a fish"]


def _copy(up, tmp_path):
    short = up.sentences(3)
    train = [
        up.race_row("high1.txt", short, "What did Tom see?", OPTS, "C"),
        up.race_row("high1.txt", short, "Tom saw _ in the park.", OPTS, "A"),  # cloze
        up.race_row("high1.txt", short, "Which is true?", ["yes", "no", "yes", "maybe"], "B"),  # duplicate option
        up.race_row("middle7.txt", up.sentences(26), "Why?", OPTS, "D"),  # 26 sentences
        up.race_row("middle8.txt", up.sentences(25), "Where?", OPTS, "A"),  # 25 sentences: kept
    ]
    dev = [up.race_row("high9.txt", short, "Who?", OPTS, "B")]
    up.write_jsonl(tmp_path / "race", "train", train)
    up.write_jsonl(tmp_path / "race", "validation", dev)
    return tmp_path / "race"


def test_race_rules_and_counts(upstream, tmp_path, ctx):
    out, stats = Race(SourceConfig(path=str(_copy(upstream, tmp_path)))).load(ctx)
    train, dev = out["train"], out["dev"]
    assert [r["question_id"] for r in train] == ["high1.txt#0", "middle8.txt#0"]
    first = train[0]
    assert first["options"] == OPTS and first["label"] == 2 and first["dataset"] == "RACE"
    assert first["passage_id"] == "high1.txt" and first["split"] == "train"
    assert "non-commercial" in first["license"]
    assert [(r["split"], r["label"]) for r in dev] == [("dev", 1)]
    assert stats.read == {"train": 5, "dev": 1}
    assert stats.kept == {"train": 2, "dev": 1}
    assert stats.dropped["train"] == {"cloze_question": 1, "duplicate_options": 1, "passage_too_long": 1}


def test_race_hub_layout_parquet_in_config_folder(upstream, tmp_path, ctx):
    row = upstream.race_row("high1.txt", "One. Two.", "Q?", OPTS, "D")
    upstream.write_parquet(tmp_path / "race" / "all", "train", [row, row])
    upstream.write_parquet(tmp_path / "race" / "all", "validation", [row])
    cfg = SourceConfig(path=str(tmp_path / "race"), config_name="all", license="mine")
    out, stats = Race(cfg).load(ctx)
    assert [r["question_id"] for r in out["train"]] == ["high1.txt#0", "high1.txt#1"]
    assert out["train"][0]["label"] == 3 and out["train"][0]["license"] == "mine"
    assert len(out["dev"]) == 1


def test_race_max_rows(upstream, tmp_path, ctx):
    out, stats = Race(SourceConfig(path=str(_copy(upstream, tmp_path)), max_rows=1)).load(ctx)
    assert stats.read["train"] == 1 and len(out["train"]) == 1


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda r: r.update(answer="E"), "'answer'"),
        (lambda r: r.pop("article"), "'article'"),
        (lambda r: r.update(options="a cat"), "'options'"),
        (lambda r: r.update(options=OPTS[:3]), "'options'"),
        (lambda r: r.update(question=5), "'question'"),
    ],
)
def test_race_bad_input_names_file_line_field(upstream, tmp_path, ctx, mutate, field):
    good = upstream.race_row("high1.txt", "One.", "Q?", OPTS, "A")
    bad = dict(good)
    mutate(bad)
    upstream.write_jsonl(tmp_path / "race", "train", [good, good, bad])
    upstream.write_jsonl(tmp_path / "race", "validation", [good])
    with pytest.raises(DataError) as err:
        Race(SourceConfig(path=str(tmp_path / "race"))).load(ctx)
    msg = str(err.value)
    assert "train.jsonl:line 3" in msg and field in msg


def test_race_truncated_json_line(upstream, tmp_path, ctx):
    good = json.dumps(upstream.race_row("high1.txt", "One.", "Q?", OPTS, "A"))
    (tmp_path / "race").mkdir()
    (tmp_path / "race" / "train.jsonl").write_text(good + "\n" + good[:40] + "\n")
    upstream.write_jsonl(tmp_path / "race", "validation", [json.loads(good)])
    with pytest.raises(DataError, match=r"train\.jsonl:line 2: invalid or truncated JSON"):
        Race(SourceConfig(path=str(tmp_path / "race"))).load(ctx)


def test_missing_split_file_is_a_clear_error(upstream, tmp_path, ctx):
    upstream.write_jsonl(tmp_path / "race", "train", [upstream.race_row("h.txt", "One.", "Q?", OPTS, "A")])
    with pytest.raises(DataError, match="no file for split 'validation'"):
        Race(SourceConfig(path=str(tmp_path / "race"))).load(ctx)
