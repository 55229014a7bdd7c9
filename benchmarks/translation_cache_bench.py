"""The translation segment cache (a folder of immutable files, :mod:`xlt.translation.cache`) vs the SQLite
WAL cache it replaced (the baseline below is that code: one table, ``INSERT OR REPLACE`` committed per batch,
``SELECT ... WHERE key IN`` in chunks of 500), side by side in one process on the same segments:

* **commit**: ``--segments`` segments committed in batches of ``--batch`` (one commit per batch, as the
  translate stage does with ``commit_every=1``), then the cache closed;
* **unit lookup**: a fresh process's first lookup of one unit's ``--unit`` segments (all present) in the
  filled cache, and of 20 segments (a translate-test item's worth).

Prints seconds per side and the ratio (xlt ÷ SQLite; below 1 xlt is faster), the files the folder holds and
the load (``uptime``). On local disk only: the point of the folder is a network filesystem, where SQLite's WAL
is not safe at all.

    OMP_NUM_THREADS=1 python benchmarks/translation_cache_bench.py [--segments 100000] [--batch 32] [--unit 20000]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

from xlt.translation.cache import TranslationCache, segment_key

IDENTITY = 'hf/{"dtype": "bfloat16", "model": "facebook/nllb-200-distilled-600M"}'


class SqliteCache:
    """The cache as xlt kept it before: SQLite in WAL mode (the baseline)."""

    def __init__(self, path: Path):
        self.db = sqlite3.connect(str(path), timeout=120)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS segments (key TEXT PRIMARY KEY, translator TEXT NOT NULL, "
                        "src_lang TEXT NOT NULL, tgt_lang TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL)")
        self.db.commit()

    def get_many(self, identity: str, src: str, tgt: str, texts: list[str]) -> dict[str, str]:
        keys = {segment_key(identity, src, tgt, t): t for t in texts}
        found, key_list = {}, list(keys)
        for i in range(0, len(key_list), 500):
            chunk = key_list[i:i + 500]
            q = f"SELECT key, target FROM segments WHERE key IN ({','.join('?' * len(chunk))})"
            for key, target in self.db.execute(q, chunk):
                found[keys[key]] = target
        return found

    def put_many(self, identity: str, src: str, tgt: str, pairs: list[tuple[str, str]]) -> None:
        rows = [(segment_key(identity, src, tgt, s), identity, src, tgt, s, t) for s, t in pairs]
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO segments VALUES (?, ?, ?, ?, ?, ?)", rows)

    def close(self) -> None:
        self.db.close()


def segments(n: int) -> list[tuple[str, str]]:
    return [(f"Sentence number {i} of a RACE-like passage, about forty characters.",
             f"Phrase numéro {i} d'un passage de type RACE, d'environ quarante caractères.") for i in range(n)]


def fill(cache, pairs: list[tuple[str, str]], batch: int) -> float:
    start = time.perf_counter()
    for i in range(0, len(pairs), batch):
        cache.put_many(IDENTITY, "eng_Latn", "fra_Latn", pairs[i:i + batch])
    cache.close()
    return time.perf_counter() - start


def lookup(make, texts: list[str]) -> float:
    cache = make()
    start = time.perf_counter()
    found = cache.get_many(IDENTITY, "eng_Latn", "fra_Latn", texts)
    took = time.perf_counter() - start
    cache.close()
    assert len(found) == len(texts)
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segments", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--unit", type=int, default=20_000)
    args = ap.parse_args()
    pairs = segments(args.segments)
    unit = [s for s, _ in pairs[:: max(1, args.segments // args.unit)]][: args.unit]
    item = unit[:20]
    with tempfile.TemporaryDirectory() as tmp:
        folder, db = Path(tmp) / "translation_cache", Path(tmp) / "old" / "translation_cache.sqlite"
        db.parent.mkdir()
        rows = [("commit", fill(TranslationCache(folder, legacy=Path(tmp) / "none"), pairs, args.batch),
                 fill(SqliteCache(db), pairs, args.batch))]
        for name, texts in ((f"lookup {len(unit)}", unit), ("lookup 20", item)):
            rows.append((name, lookup(lambda: TranslationCache(folder, legacy=Path(tmp) / "none"), texts),
                         lookup(lambda: SqliteCache(db), texts)))
        files = sum(1 for _ in folder.rglob("*.seg"))
        size = sum(p.stat().st_size for p in folder.rglob("*.seg"))
        db_size = sum(p.stat().st_size for p in db.parent.iterdir())
    print(f"{args.segments} segments, batches of {args.batch}; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    print(f"{'':<14} {'xlt files (s)':>14} {'SQLite (s)':>11} {'ratio':>7}")
    for name, ours, base in rows:
        print(f"{name:<14} {ours:>14.3f} {base:>11.3f} {ours / base:>7.2f}")
    print(f"folder: {files} files, {size / 1e6:.1f} MB; SQLite: {db_size / 1e6:.1f} MB")
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
