"""The files of the translation segment cache (:mod:`xlt.translation.cache`): immutable, checksummed,
put in place by an atomic rename, so that writers on many hosts share one folder on a network filesystem
(NFS, Lustre, GPFS) without locks, shared memory or mmap.

A *segment file* holds one JSON header line ``{"format": "xlt-segment-cache", "version": 1, "count": n,
"sha256": <of the body>}`` and ``n`` body lines ``[key, translation]``. It is written under a temporary name
``.<name>.<random>.tmp`` in its folder (which readers skip), flushed (and for a merge, synced to disk), and
renamed: a reader sees the whole file or none. A file whose header, count or checksum does not hold (truncated by a full disk, damaged by
hand) is :class:`DamagedFile`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import time
from collections.abc import Iterable
from pathlib import Path

from xlt.run.files import create_temp_file

FORMAT = "xlt-segment-cache"
VERSION = 1
SUFFIX = ".seg"
# Temporary files older than this are a killed writer's leftovers (younger ones may be a live writer's).
STALE_TMP_S = 24 * 3600


class DamagedFile(Exception):
    """A segment file that cannot be read as one (``why`` says what does not hold)."""

    def __init__(self, path: Path, why: str):
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


def writer_id(host: str | None = None) -> str:
    """A name no other writer has: ``<host>-<pid>-<random>`` (the host as a file name may spell it)."""
    name = re.sub(r"[^A-Za-z0-9_.]+", "_", host or socket.gethostname()) or "host"
    return f"{name}-{os.getpid()}-{os.urandom(4).hex()}"


def write_segments(folder: Path, name: str, records: Iterable[tuple[str, str]], durable: bool = True) -> Path:
    """Write ``records`` (key, translation) as segment file ``folder/name`` (temporary name, flush, rename).
    ``durable``: fsync before the rename (for a file that replaces others: a merge); without it the file
    survives the process's death (SIGKILL), as SQLite's ``synchronous=NORMAL`` did, and an OS crash may leave
    it damaged (detected by its checksum, skipped)."""
    body = "".join(json.dumps([k, t], ensure_ascii=False) + "\n" for k, t in records).encode("utf-8")
    header = {"format": FORMAT, "version": VERSION, "count": body.count(b"\n"),
              "sha256": hashlib.sha256(body).hexdigest()}
    path = folder / name
    fd, tmp = create_temp_file(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(json.dumps(header).encode("utf-8") + b"\n" + body)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.rename(tmp, path)  # unique name: never replaces another writer's file
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def read_segments(path: Path) -> list[tuple[str, str]]:
    """The records of segment file ``path``; FileNotFoundError if it is gone (merged by a compaction),
    :class:`DamagedFile` if it is not whole."""
    data = path.read_bytes()
    head, sep, body = data.partition(b"\n")
    try:
        header = json.loads(head)
    except ValueError:
        raise DamagedFile(path, "no segment-file header (truncated or not a cache file)") from None
    if not sep or not isinstance(header, dict) or header.get("format") != FORMAT:
        raise DamagedFile(path, "no segment-file header (truncated or not a cache file)")
    if header.get("version") != VERSION:
        raise DamagedFile(path, f"format version {header.get('version')!r}, this xlt reads {VERSION}")
    if hashlib.sha256(body).hexdigest() != header.get("sha256") or body.count(b"\n") != header.get("count"):
        raise DamagedFile(path, f"{len(data)} bytes do not match the header's count and checksum (truncated?)")
    out = []
    for line in body.decode("utf-8").splitlines():
        rec = json.loads(line)
        if not (isinstance(rec, list) and len(rec) == 2 and all(isinstance(x, str) for x in rec)):
            raise DamagedFile(path, f"a record is not [key, translation]: {line[:80]!r}")
        out.append((rec[0], rec[1]))
    return out


def list_segments(folder: Path) -> list[Path]:
    """The segment files in ``folder`` (sorted; temporary files and others skipped; none if it is missing)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    return sorted(folder / n for n in names if n.endswith(SUFFIX) and not n.startswith("."))


def remove_stale_temporaries(folder: Path) -> None:
    """Remove temporary files a killed writer left in ``folder`` (older than :data:`STALE_TMP_S`)."""
    with contextlib.suppress(FileNotFoundError):
        for name in os.listdir(folder):
            if name.startswith(".") and name.endswith(".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    if time.time() - os.stat(folder / name).st_mtime > STALE_TMP_S:
                        os.unlink(folder / name)
