"""Reading local copies of upstream datasets: split-named JSONL, JSON or Parquet files.

A local copy is a directory laid out like the Hub repository or like a plain export::

    <path>/train.jsonl, <path>/validation.jsonl          (one JSON object per line)
    <path>/train.parquet, <path>/train-00000-of-00001.parquet
    <path>/data/...  or  <path>/<config_name>/...         (Hub layouts, e.g. ehovy/race ``all/``)
    <path>/train.json, <path>/val.json                    (a JSON array: ReClor's original files)

Every row comes with a ``where`` string (``file:line N``, ``file:row N`` for Parquet, both 1-based) so
that errors name the file and the row. The anomaly policy is in :mod:`xlt.data.anomalies`.
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


def _decode_line(raw: bytes, path: Path, lineno: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(
            f"{path}:line {lineno}: undecodable bytes {raw[err.start:err.end]!r} at byte {err.start + 1} "
            "(the file is not UTF-8); re-save it as UTF-8"
        ) from None


def iter_jsonl(path: Path) -> Iterator[Row]:
    """Rows of a JSON-lines file, read line by line; a bad line raises :class:`DataError` naming it.

    Blank lines are skipped; a UTF-8 byte-order mark at the start of the file is accepted. A file with
    no row, bytes that are not UTF-8, or a line that is not one JSON object (e.g. a truncated last line)
    is an error naming the file and the 1-based line.
    """
    n = 0
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            line = _decode_line(raw, path, lineno)
            if lineno == 1:
                line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                last = "" if raw.endswith(b"\n") else " (the last line has no newline: the file looks truncated)"
                raise DataError(
                    f"{path}:line {lineno}: invalid or truncated JSON ({err.msg} at column {err.colno}){last}; "
                    "each line must hold one complete JSON object"
                ) from None
            except RecursionError:
                raise DataError(f"{path}:line {lineno}: JSON nested too deeply to read (thousands of levels); "
                                "each line must hold one flat record object") from None
            if not isinstance(obj, dict):
                raise DataError(f"{path}:line {lineno}: expected a JSON object, got {type(obj).__name__}")
            n += 1
            yield Row(obj, f"{path}:line {lineno}")
    if n == 0:
        raise DataError(f"{path}: no rows (the file is empty); put one JSON object per line in it")


def _read_text(path: Path) -> str:
    """The whole file as text (UTF-8, an optional BOM dropped); bad bytes name their 1-based line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        lineno = data.count(b"\n", 0, err.start) + 1
        raise DataError(
            f"{path}:line {lineno}: undecodable bytes {data[err.start:err.end]!r} (the file is not UTF-8); "
            "re-save it as UTF-8"
        ) from None


def iter_json_array(path: Path) -> Iterator[Row]:
    """Rows of a file holding one JSON array of objects (ReClor's original ``train.json``).

    Rows are named by the 1-based line their object starts on.
    """
    text = _read_text(path)
    if not text.strip():
        raise DataError(f"{path}: no rows (the file is empty); it must hold a JSON array of objects")
    decoder = json.JSONDecoder()
    try:
        items = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:line {err.lineno}: invalid or truncated JSON ({err.msg} at column {err.colno})") from None
    except RecursionError:
        raise DataError(f"{path}: JSON nested too deeply to read (thousands of levels); it must hold an array of "
                        "flat record objects") from None
    if isinstance(items, dict) and isinstance(items.get("data"), list):
        items = items["data"]
    if not isinstance(items, list):
        raise DataError(f"{path}:line 1: expected a JSON array of objects, got {type(items).__name__}")
    if not items:
        raise DataError(f"{path}: no rows (an empty JSON array)")
    # Line of each top-level object: scan the array once with raw_decode.
    lines = _object_lines(text, decoder, len(items))
    for i, obj in enumerate(items):
        line = lines[i] if i < len(lines) else None
        where = f"{path}:line {line} (item {i + 1})" if line else f"{path}:item {i + 1}"
        if not isinstance(obj, dict):
            raise DataError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        yield Row(obj, where)


def _object_lines(text: str, decoder: json.JSONDecoder, n: int) -> list[int]:
    """1-based line numbers where the ``n`` top-level array elements start (best effort)."""
    start = text.find("[")
    if start < 0:
        return []
    lines, pos, line = [], start + 1, text.count("\n", 0, start) + 1
    ws = " \t\r\n,"
    for _ in range(n):
        nxt = pos
        while nxt < len(text) and text[nxt] in ws:
            nxt += 1
        line += text.count("\n", pos, nxt)
        try:
            _, end = decoder.raw_decode(text, nxt)
        except json.JSONDecodeError:
            return lines
        lines.append(line)
        line += text.count("\n", nxt, end)
        pos = end
    return lines


def iter_parquet(path: Path) -> Iterator[Row]:
    """Rows of a Parquet file (read in record batches), numbered from 1 like JSONL lines."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as err:  # pyarrow raises ArrowInvalid/OSError for corrupt files
        raise DataError(f"{path}: not a readable Parquet file ({err}); re-download or re-export it") from None
    if pf.metadata.num_rows == 0:
        raise DataError(f"{path}: no rows (the Parquet file is empty)")
    i = 0
    try:
        for batch in pf.iter_batches(batch_size=4096):
            for obj in batch.to_pylist():
                i += 1
                yield Row(obj, f"{path}:row {i}")
    except (OSError, ValueError) as err:  # a truncated or corrupt row group
        raise DataError(f"{path}:row {i + 1}: unreadable Parquet data ({err}); re-download or re-export it") from None


def check_readable(path: Path) -> None:
    """A :class:`DataError` naming ``path`` when it cannot be opened (a symlink loop, a dangling link, no
    permission), before a reader meets it."""
    try:
        with open(path, "rb"):
            pass
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror or err}); replace it with the data file "
                        "(a symlink must point at a readable file)") from None


def iter_file(path: Path) -> Iterator[Row]:
    check_readable(path)
    if path.suffix == ".parquet":
        return iter_parquet(path)
    if path.suffix == ".json":
        # A ".json" file is either one array (original releases) or JSON lines (datasets' to_json).
        with open(path, "rb") as f:
            head = f.read(1024).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
        return iter_json_array(path) if head.startswith("[") or head.startswith('{"data"') else iter_jsonl(path)
    return iter_jsonl(path)


def iter_local_split(root: str | Path, split: str, config_name: str | None = None) -> Iterator[Row]:
    """All rows of ``split`` in the local copy at ``root``, in file order."""
    for path in find_split_files(root, split, config_name):
        yield from iter_file(path)

