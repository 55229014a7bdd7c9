"""Finding and reading local copies: split aliases, Hub-style shard names, data/ and config folders."""

from __future__ import annotations

import pytest

from xlt.data.sources.files import find_split_files, iter_local_split
from xlt.errors import DataError


@pytest.mark.parametrize(
    ("relpath", "split", "config"),
    [
        ("train.jsonl", "train", None),
        ("validation.jsonl", "validation", None),
        ("dev.jsonl", "validation", None),
        ("val.json", "validation", None),
        ("train.parquet", "train", None),
        ("data/train-00000-of-00001.parquet", "train", None),
        ("all/validation-00000-of-00001.parquet", "validation", "all"),
        ("data/mc500/train.jsonl", "train", "mc500"),
    ],
)
def test_find_split_files_layouts(upstream, tmp_path, relpath, split, config):
    target = tmp_path / relpath
    rows = [{"a": 1}, {"a": 2}]
    if target.suffix == ".parquet":
        upstream.write_parquet(target.parent, split, rows, name=target.name)
    else:
        upstream.write_jsonl(target.parent, split, rows, name=target.name)
    assert find_split_files(tmp_path, split, config) == [target]
    got = list(iter_local_split(tmp_path, split, config))
    assert [r.data["a"] for r in got] == [1, 2]
    assert got[1].where.startswith(str(target)) and got[1].where.endswith(("line 2", "row 2"))


def test_sharded_parquet_read_in_order(upstream, tmp_path):
    upstream.write_parquet(tmp_path / "data", "train", [{"a": 3}], name="train-00001-of-00002.parquet")
    upstream.write_parquet(tmp_path / "data", "train", [{"a": 1}, {"a": 2}], name="train-00000-of-00002.parquet")
    assert [r.data["a"] for r in iter_local_split(tmp_path, "train")] == [1, 2, 3]


def test_missing_folder_and_bad_parquet(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        find_split_files(tmp_path / "nope", "train")
    (tmp_path / "train.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataError, match=r"train\.parquet: not a readable Parquet file"):
        list(iter_local_split(tmp_path, "train"))


def test_json_line_that_is_not_an_object(tmp_path):
    (tmp_path / "train.jsonl").write_text('{"a": 1}\n[1, 2]\n')
    with pytest.raises(DataError, match=r"train\.jsonl:line 2: expected a JSON object"):
        list(iter_local_split(tmp_path, "train"))
