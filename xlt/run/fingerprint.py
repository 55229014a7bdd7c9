"""Content fingerprints of the files a stage reads: sources, benchmark copies, model weights.

A fingerprint is a SHA-256 over (relative path, content) of every file, so an edit in place, a swapped
weights file or a copy with other content changes it, and a copy with the same content does not. Hashing
is memoised on disk by (path, size, mtime, ctime, inode) in ``$XLT_CACHE/fingerprints.json`` (default
``~/.cache/xlt``), so a multi-GB checkpoint is read once, not at every rerun.

Things that are not local files are fingerprinted by their identity: a Hub id with its revision.

A reader that fingerprints the same inputs for many runs at once (``xlt status`` over a sweep: every run reads
the same benchmark copies) enters :func:`steady`: inside it, a file or folder is walked and fingerprinted once
per process for the same path and stat of its root, not once per run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock

_MEMO: dict[str, str] = {}
_CHUNK = 1 << 20
# Files that describe a folder but do not change what it computes.
_IGNORED = {"README.md", "xlt_provenance.json", ".DS_Store"}



def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (hex), read in chunks (a package's model file, a checkpoint's file)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()

def digest(obj: Any) -> str:
    """A short, stable hash of a JSON-able value (input hashes, output ids)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _cache_file() -> Path:
    root = Path(os.environ.get("XLT_CACHE", Path.home() / ".cache" / "xlt")).expanduser()
    return root / "fingerprints.json"


def _stat_key(path: Path) -> str:
    st = path.stat()
    # st_ctime_ns: a rewrite in place whose mtime was restored (touch -d, cp -p) still changes it.
    return f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}|{st.st_ino}"


def _load_memo() -> None:
    if _MEMO:
        return
    try:
        _MEMO.update(json.loads(_cache_file().read_text()))
    except (OSError, ValueError):
        pass


def _save_memo(new: dict[str, str]) -> None:
    path = _cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock", timeout=10):
            try:
                stored = json.loads(path.read_text())
            except (OSError, ValueError):
                stored = {}
            stored.update(new)
            if len(stored) > 50_000:  # keep the memo small: drop the oldest half
                stored = dict(list(stored.items())[-25_000:])
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(stored))
            os.replace(tmp, path)
    except Exception:  # the memo is an optimisation; never fail a run for it
        pass


def file_hash(path: str | os.PathLike[str], new: dict[str, str] | None = None) -> str:
    """SHA-256 of one file's content (memoised by path, size, mtime, ctime and inode).

    A hash computed here is added to ``new`` when given (the caller saves a batch to the disk memo once),
    else saved at once.
    """
    path = Path(path)
    _load_memo()
    key = _stat_key(path)
    if key in _MEMO:
        return _MEMO[key]
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    digest = h.hexdigest()
    _MEMO[key] = digest
    if new is None:
        _save_memo({key: digest})
    else:
        new[key] = digest
    return digest


# Inside steady(): (what, resolved root, its stat, ...) -> a walk's files or a fingerprint; None outside.
_STEADY: dict[tuple[Any, ...], Any] | None = None


@contextlib.contextmanager
def steady() -> Iterator[None]:
    """Within the block, inputs are taken as steady: the walk of a folder and the fingerprint of a file or
    folder are computed once for the same path and stat of its root (size, mtime, ctime, inode) and reused.
    For a reader of many runs' inputs (``xlt status``); the stages never enter it (a run re-reads its inputs)."""
    global _STEADY
    outer = _STEADY
    _STEADY = {} if outer is None else outer
    try:
        yield
    finally:
        _STEADY = outer


def _steady_key(what: str, root: Path, *extra: Any) -> tuple[Any, ...] | None:
    if _STEADY is None:
        return None
    try:
        st = root.stat()
    except OSError:
        return None
    return (what, str(root.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, *extra)


def _files(root: Path) -> Iterable[Path]:
    key = _steady_key("files", root)
    if key is None:
        return _walk(root)
    if key not in _STEADY:  # type: ignore[operator]
        _STEADY[key] = list(_walk(root))  # type: ignore[index]
    return iter(_STEADY[key])  # type: ignore[index]


def _walk(root: Path) -> Iterable[Path]:
    if root.is_file():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith(".") and name not in _IGNORED:
                yield Path(dirpath) / name


def path_fingerprint(path: str | os.PathLike[str], only: Iterable[Path] | None = None) -> str:
    """Fingerprint of a file or folder (all files below it, or just ``only``); "missing:<path>" if absent."""
    root = Path(path).expanduser()
    if not root.exists():
        return f"missing:{root}"
    only = sorted(only) if only is not None else None
    key = _steady_key("fingerprint", root, None if only is None else tuple(map(str, only)))
    if key is not None and key in _STEADY:  # type: ignore[operator]
        return _STEADY[key]  # type: ignore[index]
    files = only if only is not None else list(_files(root))
    h = hashlib.sha256()
    new: dict[str, str] = {}
    for f in files:
        rel = f.name if root.is_file() else str(f.relative_to(root))
        h.update(rel.encode() + b"\0" + file_hash(f, new).encode() + b"\0")
    if new:
        _save_memo(new)
    if key is not None:
        _STEADY[key] = h.hexdigest()[:16]  # type: ignore[index]
    return h.hexdigest()[:16]


def language_fingerprint(path: str | os.PathLike[str], language: str) -> str:
    """Fingerprint of the files of one language in a benchmark copy (files or folders named after the
    code, e.g. ``data/deu_Latn.jsonl`` or ``de/test-*.parquet``); the whole copy if none is named so."""
    root = Path(path).expanduser()
    if not root.is_dir():
        return path_fingerprint(root)
    mine = [f for f in _files(root) if f.stem == language or language in f.relative_to(root).parts[:-1]]
    return path_fingerprint(root, mine) if mine else path_fingerprint(root)


def cached_commit(repo_id: str, revision: str | None = None) -> str | None:
    """The commit the local Hugging Face cache resolves ``revision`` (default ``main``) of ``repo_id`` to:
    the snapshot a run offline loads (None: nothing of it cached). Read from the cache only, never the
    network."""
    try:
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except Exception:  # a malformed id or an unreadable cache: no commit known
        return None
    return Path(hit).parent.name if isinstance(hit, str) else None


def resource_fingerprint(name_or_path: str | None, revision: str | None = None) -> str | None:
    """A local path's content fingerprint, or a Hub id's identity: ``hub:<id>@<commit>`` with the commit the
    cache resolves the revision to (``xlt.prefetch`` fills it), else ``hub:<id>@<revision or main>``. (A model
    converted from a package is fingerprinted where the stages declare their inputs: :func:`xlt.stages.inputs.model_fingerprint`.)"""
    if not name_or_path:
        return None
    local = Path(str(name_or_path)).expanduser()
    if local.exists():
        return path_fingerprint(local)
    return f"hub:{name_or_path}@{cached_commit(str(name_or_path), revision) or revision or 'main'}"
