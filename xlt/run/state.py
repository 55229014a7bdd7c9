"""The one checked reader of the files xlt wrote into a run directory and reads back.

Nothing xlt reads back from its own run directory (stage markers, results, predictions, plans, locks,
recorded inputs, model provenance, reports) is trusted blindly: :func:`read_state` reads it and checks
it against a small schema (required keys and their types, nested). A file that fails the check is
*damaged* (:class:`Damaged`: folder where a file belongs, unreadable, not UTF-8, not JSON, another
shape) and each caller handles it by its class:

* **derivable** (markers, results, predictions, plans, reports, recorded inputs): :func:`read_or_redo`
  logs which file is damaged and why, and the caller recomputes it;
* **recoverable** (Trainer checkpoints): :mod:`xlt.training.checkpoints` resumes from the newest
  complete one;
* **the user's to decide** (a model that no longer matches what training produced, a damaged lock):
  :class:`StateError` (an ``xlt: error:``) naming the file, what was expected and the fix.
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path
from typing import Any

from xlt.errors import XltError
from xlt.run.files import atomic_write_json
from xlt.run.fingerprint import path_fingerprint

log = logging.getLogger("xlt.state")


class Damaged(Exception):
    """A run-directory file xlt wrote is not what it wrote: ``path`` and ``why``."""

    def __init__(self, path: str | os.PathLike[str], why: str):
        self.path = Path(path)
        self.why = why
        super().__init__(f"{self.path}: {why}")


class StateError(XltError):
    """Run-directory state that xlt must not repair on its own: the message names the file and the fix."""


# A schema is a dict of required keys -> a type, a tuple of types, or a nested schema (a dict).
Schema = dict[str, Any]

NUMBER = (int, float)
MARKER: Schema = {"provenance": {"inputs": str, "output_id": str}}
RESULT: Schema = {"benchmark": str, "language": str, "accuracy": NUMBER, "n": int, "correct": int}
PLAN: Schema = {"benchmark": str, "kind": str, "languages": list}
INPUTS: Schema = {"inputs": str}
LOCK: Schema = {"host": str, "pid": int}
MODEL_PROVENANCE: Schema = {"fingerprint": str}
TRAIN_METRICS: Schema = {"global_step": int, "provenance": dict}
REPORT: Schema = {"provenance": dict}
PREDICTION: Schema = {"id": (str, int), "gold": int, "prediction": int}
BUILD_REPORT: Schema = {"provenance": dict}


def _type_name(t: Any) -> str:
    if isinstance(t, tuple):
        return " or ".join(x.__name__ for x in t)
    return "object" if isinstance(t, dict) else t.__name__


def check_schema(value: Any, schema: Schema, where: str = "") -> str | None:
    """The first way ``value`` differs from ``schema`` (None: it matches)."""
    if not isinstance(value, dict):
        return f"{where or 'the file'} is a JSON {type(value).__name__}, not an object"
    for key, want in schema.items():
        name = f"{where}.{key}" if where else key
        if key not in value:
            return f"field {name!r} missing"
        got = value[key]
        if isinstance(want, dict):
            problem = check_schema(got, want, name)
            if problem:
                return problem
            continue
        types = want if isinstance(want, tuple) else (want,)
        if isinstance(got, bool) and bool not in types or not isinstance(got, types):
            return f"field {name!r} is {type(got).__name__}, expected {_type_name(want)}"
        if isinstance(got, float) and not math.isfinite(got):
            return f"field {name!r} is not a finite number"
    return None


def read_text(path: str | os.PathLike[str]) -> str | None:
    """The UTF-8 text of a file xlt wrote; None when absent; :class:`Damaged` when it cannot be read."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_dir():
        raise Damaged(path, "a folder where a file belongs")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise Damaged(path, f"unreadable ({err.strerror or err})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise Damaged(path, f"not UTF-8 (line {line})") from None


def read_state(path: str | os.PathLike[str], schema: Schema | None = None) -> Any:
    """Read a JSON file of the run directory and check it: its value; None when the file is absent.

    Raises :class:`Damaged` (with the reason) when it is a folder, unreadable, empty, not UTF-8, not
    JSON, or does not match ``schema``.
    """
    text = read_text(path)
    if text is None:
        return None
    if not text.strip():
        raise Damaged(path, "empty file")
    try:
        value = json.loads(text)
    except ValueError as err:
        raise Damaged(path, f"not valid JSON ({err.msg} at line {err.lineno})") from None
    except RecursionError:
        raise Damaged(path, "JSON nested too deeply to be what xlt writes") from None
    if schema is not None:
        problem = check_schema(value, schema)
        if problem:
            raise Damaged(path, f"not the file xlt writes here: {problem}")
    return value


def read_jsonl_state(path: str | os.PathLike[str], schema: Schema | None = None) -> list[Any] | None:
    """Read a JSONL file of the run directory, every line checked; None when absent; else :class:`Damaged`."""
    text = read_text(path)
    if text is None:
        return None
    rows = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    elif lines:
        raise Damaged(path, f"truncated: line {len(lines)} has no line end")
    for lineno, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except ValueError as err:
            raise Damaged(path, f"line {lineno}: not valid JSON ({err.msg})") from None
        except RecursionError:
            raise Damaged(path, f"line {lineno}: JSON nested too deeply to be what xlt writes") from None
        if schema is not None:
            problem = check_schema(row, schema)
            if problem:
                raise Damaged(path, f"line {lineno}: {problem}")
        rows.append(row)
    return rows


def redo(err: Damaged, what: str = "recomputed") -> None:
    """Log that a derivable file is damaged and is being redone."""
    log.warning("damaged %s (%s): it is %s", err.path, err.why, what)


def read_or_redo(path: str | os.PathLike[str], schema: Schema | None = None, what: str = "recomputed") -> Any:
    """:func:`read_state` for a derivable file: a damaged file is logged and read as absent (None)."""
    try:
        return read_state(path, schema)
    except Damaged as err:
        redo(err, what)
        return None


def load_dataset_dir(path: str | os.PathLike[str]) -> Any:
    """``datasets.load_from_disk`` of a folder xlt saved, every split's Arrow data read through:
    :class:`Damaged` when it is missing a file, truncated or unreadable."""
    from datasets import load_from_disk

    path = Path(path)
    if not path.is_dir():
        raise Damaged(path, "a file where a dataset folder belongs" if path.exists() else "missing")
    try:
        ds = load_from_disk(str(path))
        for split in getattr(ds, "values", lambda: [ds])():
            split.data.table.validate(full=False)
            len(split)
    except Exception as err:  # noqa: BLE001 - pyarrow/datasets raise many types for a damaged folder
        raise Damaged(path, f"unreadable dataset ({type(err).__name__}: {str(err)[:200]})") from None
    return ds


def data_fingerprint(folder: str | os.PathLike[str], record: str | None = None) -> str:
    """Fingerprint of a folder's data as xlt wrote it: every file but the ``record`` that seals it, dot files
    and ``datasets`` map caches (``cache-*``, ``tmp*``). Arrow files cannot be checked by their structure
    alone (a truncated stream reads short), so folders of them are sealed with this fingerprint."""
    root = Path(folder)
    if not root.is_dir():
        return path_fingerprint(root)
    files = [p for p in root.rglob("*") if p.is_file() and p.name != record
             and not p.name.startswith(("cache-", "tmp", "."))]
    return path_fingerprint(root, files)


def seal(folder: str | os.PathLike[str], record: str, value: dict[str, Any]) -> None:
    """Write ``value`` with the fingerprint of the folder's data as its ``record`` file (last, atomically)."""
    atomic_write_json(Path(folder) / record, {**value, "fingerprint": data_fingerprint(folder, record)})


def read_sealed(folder: str | os.PathLike[str], record: str, schema: Schema | None = None) -> tuple[Any, Any] | None:
    """``(record, dataset)`` of a folder written by :func:`seal`, checked: None when it has no record (not
    finished); :class:`Damaged` when the record is damaged or the data is no longer what was sealed."""
    folder = Path(folder)
    value = read_state(folder / record, {**(schema or {}), "fingerprint": str})
    if value is None:
        return None
    now = data_fingerprint(folder, record)
    if now != value["fingerprint"]:
        raise Damaged(folder, f"its data changed since it was written (sealed fingerprint {value['fingerprint']}, "
                              f"now {now}: a file edited, truncated or replaced)")
    return value, load_dataset_dir(folder)
