"""SciQ loader on local copies in the allenai/sciq schema."""

from __future__ import annotations

import pytest

from xlt.config.data import SourceConfig
from xlt.data.sources.sciq import SciQ
from xlt.errors import DataError


def _rows(up):
    return [
        up.sciq_row("What do plants make?", "sugar", ["salt", "iron", "oil"], "Plants make sugar. They use light."),
        up.sciq_row("What is H2O?", "water", ["air", "fire", "earth"], ""),  # empty support
        up.sciq_row("Cells have a _ .", "nucleus", ["wheel", "tail", "fin"], "Cells have parts."),  # cloze
        up.sciq_row("What is long?", "this", ["a", "b", "c"], up.sentences(30)),  # too long
        up.sciq_row("Which gas?", "oxygen", ["oxygen", "neon", "argon"], "Gas."),  # duplicate option
        up.sciq_row("Which metal?", "iron", ["gold", "tin", "lead"], "Metals. Many kinds."),
    ]


def test_sciq_rules_counts_and_seeded_shuffle(upstream, tmp_path, ctx):
    upstream.write_jsonl(tmp_path / "sciq", "train", _rows(upstream))
    upstream.write_jsonl(tmp_path / "sciq", "validation", _rows(upstream)[:1])
    out, stats = SciQ(SourceConfig(path=str(tmp_path / "sciq"))).load(ctx)
    train = out["train"]
    assert [r["question_id"] for r in train] == ["train-0", "train-5"]
    for r, correct in zip(train, ["sugar", "iron"], strict=True):
        assert r["options"][r["label"]] == correct and len(set(r["options"])) == 4
        assert r["dataset"] == "sciQ"
    assert sorted(train[0]["options"]) == sorted(["sugar", "salt", "iron", "oil"])
    assert stats.dropped["train"] == {
        "cloze_question": 1, "duplicate_options": 1, "empty_support": 1, "passage_too_long": 1,
    }
    assert stats.kept == {"train": 2, "dev": 1} and stats.read == {"train": 6, "dev": 1}
    # Same passage text -> same passage id, different split -> independent shuffle key.
    assert out["dev"][0]["passage_id"] == train[0]["passage_id"]

    # Deterministic: the same seed gives the same order; the shuffle depends on the seed.
    again, _ = SciQ(SourceConfig(path=str(tmp_path / "sciq"))).load(ctx)
    assert again == out
    orders = set()
    for seed in range(8):
        ctx.seed = seed
        o, _ = SciQ(SourceConfig(path=str(tmp_path / "sciq"))).load(ctx)
        orders.add(tuple(o["train"][0]["options"]))
    assert len(orders) > 1


def test_sciq_labels_spread_over_positions(upstream, tmp_path, ctx):
    rows = [upstream.sciq_row(f"Question {i}?", f"right{i}", [f"w{i}a", f"w{i}b", f"w{i}c"], "Text.") for i in range(80)]
    upstream.write_jsonl(tmp_path / "sciq", "train", rows)
    upstream.write_jsonl(tmp_path / "sciq", "validation", rows[:1])
    out, _ = SciQ(SourceConfig(path=str(tmp_path / "sciq"))).load(ctx)
    assert {r["label"] for r in out["train"]} == {0, 1, 2, 3}


def test_sciq_missing_distractor_names_field(upstream, tmp_path, ctx):
    bad = upstream.sciq_row("Q?", "a", ["b", "c", "d"], "S.")
    del bad["distractor2"]
    upstream.write_jsonl(tmp_path / "sciq", "train", [bad])
    upstream.write_jsonl(tmp_path / "sciq", "validation", [bad])
    with pytest.raises(DataError, match=r"train\.jsonl:line 1: missing field 'distractor2'"):
        SciQ(SourceConfig(path=str(tmp_path / "sciq"))).load(ctx)
