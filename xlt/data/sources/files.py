"""Reading local copies of upstream datasets: split-named JSONL, JSON or Parquet files.

A local copy is a directory laid out like the Hub repository or like a plain export::

    <path>/train.jsonl, <path>/validation.jsonl          (one JSON object per line)
    <path>/train.parquet, <path>/train-00000-of-00001.parquet
    <path>/data/...  or  <path>/<config_name>/...         (Hub layouts, e.g. ehovy/race ``all/``)
    <path>/train.json, <path>/val.json                    (a JSON array: ReClor's original files)

Every row comes with a ``where`` string (``file:line N``) so that errors name the file and the row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlt.errors import DataError

# Upstream split name -> the file stems that may hold it.
SPLIT_ALIASES: dict[str, tuple[str, ...]] = {
    "train": ("train",),
    "validation": ("validation", "valid", "val", "dev"),
    "test": ("test",),
}
SUFFIXES = (".jsonl", ".json", ".parquet")


@dataclass(frozen=True)
class Row:
    """One upstream row and where it came from (for error messages)."""

    data: dict[str, Any]
    where: str


def search_dirs(root: Path, config_name: str | None) -> list[Path]:
    dirs = [root, root / "data"]
    if config_name:
        dirs += [root / config_name, root / "data" / config_name, root / config_name / "data"]
    return [d for d in dirs if d.is_dir()]


def find_split_files(root: str | Path, split: str, config_name: str | None = None) -> list[Path]:
    """The files of ``split`` under the local copy ``root`` (sorted shards), or raise :class:`DataError`."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise DataError(f"local copy {root} does not exist or is not a directory")
    stems = SPLIT_ALIASES.get(split, (split,))
    for d in search_dirs(root, config_name):
        for stem in stems:
            for suffix in SUFFIXES:
                exact = d / f"{stem}{suffix}"
                if exact.is_file():
                    return [exact]
            shards = sorted(p for p in d.glob(f"{stem}-*.parquet") if p.is_file())
            shards += sorted(p for p in d.glob(f"{stem}-*.jsonl") if p.is_file())
            if shards:
                return shards
    tried = ", ".join(f"{s}{{{','.join(SUFFIXES)}}}" for s in stems)
    raise DataError(
        f"local copy {root}: no file for split '{split}' (looked for {tried} and '{stems[0]}-*.parquet' "
        f"in {root}, {root}/data" + (f", {root}/{config_name}" if config_name else "") + ")"
    )


def iter_jsonl(path: Path) -> Iterator[Row]:
    """Rows of a JSON-lines file, read line by line; a bad line raises :class:`DataError` naming it."""
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}:line {lineno}: invalid or truncated JSON ({err.msg} at column {err.colno})") from None
            if not isinstance(obj, dict):
                raise DataError(f"{path}:line {lineno}: expected a JSON object, got {type(obj).__name__}")
            yield Row(obj, f"{path}:line {lineno}")


def iter_json_array(path: Path) -> Iterator[Row]:
    """Rows of a file holding one JSON array of objects (ReClor's original ``train.json``)."""
    try:
        with open(path, encoding="utf-8") as f:
            items = json.load(f)
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:line {err.lineno}: invalid or truncated JSON ({err.msg})") from None
    if isinstance(items, dict) and isinstance(items.get("data"), list):
        items = items["data"]
    if not isinstance(items, list):
        raise DataError(f"{path}: expected a JSON array of objects, got {type(items).__name__}")
    for i, obj in enumerate(items):
        if not isinstance(obj, dict):
            raise DataError(f"{path}:item {i}: expected a JSON object, got {type(obj).__name__}")
        yield Row(obj, f"{path}:item {i}")


def iter_parquet(path: Path) -> Iterator[Row]:
    """Rows of a Parquet file (read in record batches)."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as err:  # pyarrow raises ArrowInvalid/OSError for corrupt files
        raise DataError(f"{path}: not a readable Parquet file ({err})") from None
    i = 0
    for batch in pf.iter_batches(batch_size=4096):
        for obj in batch.to_pylist():
            yield Row(obj, f"{path}:row {i}")
            i += 1


def iter_file(path: Path) -> Iterator[Row]:
    if path.suffix == ".parquet":
        return iter_parquet(path)
    if path.suffix == ".json":
        # A ".json" file is either one array (original releases) or JSON lines (datasets' to_json).
        with open(path, encoding="utf-8") as f:
            head = f.read(1024).lstrip()
        return iter_json_array(path) if head.startswith("[") or head.startswith('{"data"') else iter_jsonl(path)
    return iter_jsonl(path)


def iter_local_split(root: str | Path, split: str, config_name: str | None = None) -> Iterator[Row]:
    """All rows of ``split`` in the local copy at ``root``, in file order."""
    for path in find_split_files(root, split, config_name):
        yield from iter_file(path)

