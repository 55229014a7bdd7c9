"""Writing result files: atomically (a crash leaves the old file or none, never half of one), and JSON
strictly (NaN -> null, numpy -> Python), so every reader, ``json.loads`` or a browser, can parse them.

The one writer of every file xlt leaves in a run directory or a comparison folder. Files and folders follow
the umask like any the user writes (0666 / 0777 less the umask; a setgid folder's group is inherited), so
a run or a cache written under ``umask 002`` in a group folder is the group's to read (docs/run-directory.md).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xlt.errors import XltError

# Called before each write below puts a file in place; one that raises stops the write (xlt.lock registers
# its check: a run whose lock is lost writes nothing more).
BEFORE_WRITE: list[Callable[[], None]] = []


def remove_path(path: str | os.PathLike[str]) -> None:
    """Remove a file, or a folder found where a file belongs (a damaged run directory)."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


# Temporary names beside the target: ".<name>.<random>.tmp" (what readers skip, e.g. sealed fingerprints).
_TMP_TRIES = 100


def _temp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")


def create_temp_file(path: Path) -> tuple[int, Path]:
    """A new temporary file beside ``path``, open for writing: created with mode 0666, so that the umask (and
    a default ACL of the folder) decide its permissions as for any file the user writes. ``tempfile.mkstemp``
    creates 0600 whatever the umask: renamed into place, a group could not read a shared run."""
    for _ in range(_TMP_TRIES):
        tmp = _temp_name(path)
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"no free temporary name beside {path}", str(path))


def create_temp_dir(path: Path) -> Path:
    """A new temporary folder beside ``path``: mode 0777 less the umask (a setgid parent's group and bit are
    inherited), as ``mkdir`` makes any folder; ``tempfile.mkdtemp`` makes 0700 whatever the umask."""
    for _ in range(_TMP_TRIES):
        tmp = _temp_name(path)
        try:
            os.mkdir(tmp, 0o777)
            return tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"no free temporary name beside {path}", str(path))


def current_umask() -> int:
    """This process's umask (read from ``/proc/self/status`` where it says; else set and put back)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def follow_umask(path: str | os.PathLike[str]) -> int:
    """Give ``path`` and everything under it the permissions the umask gives a new file or folder (0666 /
    0777 less the umask; files with an execute bit as folders; a folder's setgid bit kept), as far as this
    user owns them; return how many were changed.

    For folders a library wrote: ``safetensors`` >= 0.8 writes every file 0600 whatever the umask (it writes
    through a temporary file, safetensors#782), so a model, a checkpoint or an adapter written under ``umask
    002`` in a group folder would be the one file a colleague cannot read."""
    mask, uid, changed = current_umask(), os.getuid(), 0
    root = Path(path)
    if not root.exists():
        return 0
    entries = [root, *root.rglob("*")] if root.is_dir() else [root]
    for entry in entries:
        try:
            st = entry.lstat()
        except FileNotFoundError:
            continue
        if st.st_uid != uid or stat.S_ISLNK(st.st_mode):
            continue
        mode = stat.S_IMODE(st.st_mode)
        full = 0o777 if stat.S_ISDIR(st.st_mode) or mode & 0o111 else 0o666
        want = (full & ~mask) | (mode & stat.S_ISGID if stat.S_ISDIR(st.st_mode) else 0)
        if mode != want:
            os.chmod(entry, want)
            changed += 1
    return changed


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and an atomic rename."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir() and not path.is_symlink():  # a damaged run directory: a folder where the file belongs
            shutil.rmtree(path)
        fd, tmp = create_temp_file(path)
    except OSError as err:
        raise WriteError(path, err) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        for check in BEFORE_WRITE:
            check()
        os.replace(tmp, path)
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(err, OSError):
            raise WriteError(path, err) from None
        raise


class WriteError(XltError, OSError):
    """A run-directory file cannot be written (no space, no permission, a file where a folder belongs)."""

    def __init__(self, path: Path, err: OSError):
        where = next((p for p in [path.parent, *path.parent.parents] if p.exists()), path.parent)
        hint = (f"{where} is a file where a folder belongs: remove it" if where.is_file() else
                "free some space" if err.errno == 28 else f"make {where} writable, or use another run_root")
        super().__init__(f"cannot write {path}: {err.strerror or err}; {hint}, then rerun")


def strict_json(obj: Any) -> Any:
    """``obj`` as plain JSON values, so that any parser reads the file: every non-finite float (NaN, inf:
    e.g. the accuracy of an empty subset) and ``pd.NA`` become None (``null``), numpy scalars and arrays
    Python numbers and lists, mappings dicts with string keys, other sequences lists; anything else
    (a path, a timestamp) its ``str``."""
    if obj is None or isinstance(obj, (str, bool)):
        return obj
    if isinstance(obj, float):  # also numpy.float64
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, np.generic):
        return strict_json(obj.item())
    if isinstance(obj, np.ndarray):
        return strict_json(obj.tolist())
    if isinstance(obj, Mapping):
        return {k if isinstance(k, str) else str(k): strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, Sequence)) and not isinstance(obj, (bytes, bytearray)):
        return [strict_json(v) for v in obj]
    pandas = sys.modules.get("pandas")  # pd.NA exists only once pandas is loaded
    if pandas is not None and obj is pandas.NA:
        return None
    return str(obj)


def json_text(obj: Any, indent: int | None = 2, separators: tuple[str, str] | None = None) -> str:
    """``obj`` as strict JSON text (:func:`strict_json`, ``allow_nan=False``), non-ASCII kept; ``indent=None``:
    one line (a JSONL row)."""
    return json.dumps(strict_json(obj), indent=indent, ensure_ascii=False, allow_nan=False, separators=separators)


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as strict JSON (:func:`json_text`: NaN -> null) atomically."""
    atomic_write_text(path, json_text(obj) + "\n")


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary sibling folder; on success it replaces ``path`` in one rename.

    Use it for outputs written as folders (``save_to_disk``, ``save_pretrained``): readers never see
    a half-written folder, and a crash leaves the previous version (or nothing) in place.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = create_temp_dir(path)
    try:
        yield tmp
        for check in BEFORE_WRITE:
            check()
        follow_umask(tmp)  # what a library wrote inside owner-only (safetensors) becomes the group's to read
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
