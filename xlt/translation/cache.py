"""SQLite cache of translated segments.

Each segment is stored under ``sha256(translator identity, source language, target language, text)``;
the identity holds the model, revision and generation settings, so a change of any of them misses
the cache instead of reusing stale outputs. Writes are committed in batches (the caller commits after
each generation batch): a killed run loses at most one batch. WAL mode and a busy timeout let several
shard processes share one cache file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS segments (
    key TEXT PRIMARY KEY,
    translator TEXT NOT NULL,
    src_lang TEXT NOT NULL,
    tgt_lang TEXT NOT NULL,
    source TEXT NOT NULL,
    target TEXT NOT NULL
)
"""
_CHUNK = 500  # SQLite host-parameter limit is 999 on old builds


def segment_key(identity: str, src_lang: str, tgt_lang: str, text: str) -> str:
    payload = json.dumps([identity, src_lang, tgt_lang, text], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class TranslationCache:
    """A persistent ``(translator, src, tgt, text) -> translation`` map in one SQLite file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Created here with 0666 less the umask, as any file the user writes (SQLite's own default is 0644: a
        # group could not write a shared cache); its -wal and -shm files take the database file's mode.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # empty: a valid database
        self._db = sqlite3.connect(str(self.path), timeout=120)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        self._db.commit()

    def __enter__(self) -> TranslationCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM segments").fetchone()[0])

    def get_many(self, identity: str, src_lang: str, tgt_lang: str, texts: Sequence[str]) -> dict[str, str]:
        """Cached translations of ``texts`` (only the ones present), keyed by source text."""
        keys = {segment_key(identity, src_lang, tgt_lang, t): t for t in texts}
        found: dict[str, str] = {}
        key_list = list(keys)
        for i in range(0, len(key_list), _CHUNK):
            chunk = key_list[i : i + _CHUNK]
            q = f"SELECT key, target FROM segments WHERE key IN ({','.join('?' * len(chunk))})"
            for key, target in self._db.execute(q, chunk):
                found[keys[key]] = target
        return found

    def put_many(self, identity: str, src_lang: str, tgt_lang: str, pairs: Iterable[tuple[str, str]]) -> None:
        """Store ``(source, translation)`` pairs and commit them in one transaction."""
        rows = [(segment_key(identity, src_lang, tgt_lang, s), identity, src_lang, tgt_lang, s, t) for s, t in pairs]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO segments VALUES (?, ?, ?, ?, ?, ?)", rows)
