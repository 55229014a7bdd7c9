"""ReClor loader on the tasksource/reclor schema (string labels) and the original JSON (int labels)."""

from __future__ import annotations

import json

import pytest

from xlt.config.data import SourceConfig
from xlt.data.sources.reclor import ReClor
from xlt.errors import DataError

ANS = ["It rains.", "It snows.", "It is sunny.", "It is windy."]


def test_reclor_hub_schema_string_labels_no_sentence_filter(upstream, tmp_path, ctx):
    long_context = upstream.sentences(40)
    rows = [upstream.reclor_row("train_0", long_context, "Which follows?", ANS, "2")]
    upstream.write_jsonl(tmp_path / "reclor", "train", rows)
    upstream.write_jsonl(tmp_path / "reclor", "validation", [upstream.reclor_row("val_0", "C.", "Q?", ANS, "0")])
    out, stats = ReClor(SourceConfig(path=str(tmp_path / "reclor"))).load(ctx)
    (r,) = out["train"]
    assert r["label"] == 2 and r["options"] == ANS and r["passage"] == long_context
    assert r["passage_id"] == r["question_id"] == "train_0" and r["dataset"] == "ReClor"
    assert "non-commercial" in r["license"]
    assert out["dev"][0]["label"] == 0 and stats.kept == {"train": 1, "dev": 1}


def test_reclor_original_json_arrays(upstream, tmp_path, ctx):
    (tmp_path / "reclor").mkdir()
    (tmp_path / "reclor" / "train.json").write_text(json.dumps([upstream.reclor_row("train_5", "C.", "Q?", ANS, 3)]))
    (tmp_path / "reclor" / "val.json").write_text(json.dumps([upstream.reclor_row("val_1", "C.", "Q?", ANS, 1)]))
    out, _ = ReClor(SourceConfig(path=str(tmp_path / "reclor"))).load(ctx)
    assert out["train"][0]["label"] == 3 and out["dev"][0]["label"] == 1


@pytest.mark.parametrize("label", [4, "x", -1, None])
def test_reclor_bad_label(upstream, tmp_path, ctx, label):
    (tmp_path / "reclor").mkdir()
    rows = [upstream.reclor_row("train_0", "C.", "Q?", ANS, 0), upstream.reclor_row("train_1", "C.", "Q?", ANS, label)]
    (tmp_path / "reclor" / "train.json").write_text(json.dumps(rows))
    (tmp_path / "reclor" / "val.json").write_text(json.dumps(rows[:1]))
    with pytest.raises(DataError, match=r"train\.json:line 1 \(item 2\): field 'label'"):
        ReClor(SourceConfig(path=str(tmp_path / "reclor"))).load(ctx)
