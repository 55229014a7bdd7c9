"""The cache of translated segments: a folder of immutable segment files, safe with writers on many hosts
over a network filesystem (NFS, Lustre, GPFS).

Each segment is stored under ``sha256(translator identity, source language, target language, text)``; the
identity holds the model, revision, generation settings and the dtype / compute type the run's translator
runs in, so a change of any of them misses the cache instead of reusing stale outputs.

Layout of the cache folder (``translation_cache/``)::

    format.json            the format's name and version
    incoming/<writer>-<n>.seg   one file per committed batch (the caller commits after each generation batch)
    <xx>/<writer>-<n>.seg      segments whose key starts with the hex digits ``xx`` (256 buckets)
    damaged/               files found damaged (truncated, not a cache file), moved out of the way
    migrated-<name>.json   an old SQLite cache beside the folder was copied in (it is left as it was)

Every file is written under a temporary name and renamed (:mod:`xlt.translation.cache_files`): a killed writer
loses at most the batch it was writing, and a reader sees whole files only. A writer's name holds its host,
pid and a random part, so writers never write the same file; nothing relies on POSIX locks, shared memory or
mmap (which SQLite's WAL needs, and which a network filesystem does not give between hosts).

A lookup reads ``incoming/`` and the buckets of the keys it looks up, never the whole cache. Files are merged
without locks: a *compaction* reads a set of files, writes what they hold as one new file (renamed into
place), then removes the files it read. Two compactions of the same files leave the segments twice (the same
key: the same translation; a lookup takes the smallest, so the answer does not depend on file order); a
lookup that finds a file gone (merged meanwhile) lists the folder again. ``incoming/`` is distributed into the
buckets by whoever finds it holding more than ``compact_at`` files (each writer looks now and then, and
distributes its own files when it closes); a bucket is merged into one file by a lookup that has just read
more than ``merge_at`` files of it.

Damaged files are named in the log, counted (:attr:`TranslationCache.damaged`), moved to ``damaged/`` and
skipped: their segments are translated again; the run never stops for them. An SQLite cache of earlier xlt
versions (``translation_cache.sqlite`` beside the folder) is read once, read-only, into the folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

from xlt.errors import ConfigError
from xlt.run.files import atomic_write_json
from xlt.translation import cache_files as cf

log = logging.getLogger(__name__)

FORMAT_FILE = "format.json"
INCOMING = "incoming"
DAMAGED = "damaged"
COMPACT_AT = 256  # files in incoming/ before they are distributed into the buckets
MERGE_AT = 64  # files in one bucket before a lookup merges them
_MIGRATE_ROWS = 100_000  # rows of an old SQLite cache copied per step


def segment_key(identity: str, src_lang: str, tgt_lang: str, text: str) -> str:
    payload = json.dumps([identity, src_lang, tgt_lang, text], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def bucket(key: str) -> str:
    """The bucket (folder) of a segment key: its first two hex digits."""
    return key[:2]


def legacy_path(root: Path) -> Path:
    """Where an earlier xlt kept the SQLite cache this folder replaces: ``<root>.sqlite``."""
    return root.with_name(root.name + ".sqlite")


class TranslationCache:
    """A persistent ``(translator, src, tgt, text) -> translation`` map in folder ``root`` (module docstring).

    ``writer``: this writer's unique name (default :func:`xlt.translation.cache_files.writer_id`: host, pid,
    random); ``legacy``: an old SQLite cache to copy in (default :func:`legacy_path`, when it exists)."""

    def __init__(self, root: str | Path, *, writer: str | None = None, legacy: Path | None = None,
                 compact_at: int = COMPACT_AT, merge_at: int = MERGE_AT):
        self.root = Path(root)
        self.writer = writer or cf.writer_id()
        self.compact_at = compact_at
        self.merge_at = merge_at
        self.damaged: dict[str, str] = {}  # file -> why it was skipped
        self._seq = 0
        self._puts = 0
        (self.root / INCOMING).mkdir(parents=True, exist_ok=True)
        self._check_format()
        legacy = legacy if legacy is not None else legacy_path(self.root)
        if legacy.is_file():
            self._migrate(legacy)

    def __enter__(self) -> TranslationCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- public ----------------------------------------------------------------------------------------
    def get_many(self, identity: str, src_lang: str, tgt_lang: str, texts: Sequence[str]) -> dict[str, str]:
        """Cached translations of ``texts`` (only the ones present), keyed by source text."""
        keys = {segment_key(identity, src_lang, tgt_lang, t): t for t in texts}
        if not keys:
            return {}
        found: dict[str, str] = {}
        wanted = set(keys)
        incoming = self._scan(self.root / INCOMING, wanted, found, keep_all=None)
        for b in sorted({bucket(k) for k in keys}):
            self._scan(self.root / b, wanted, found, keep_all=self.merge_at)
        if incoming is not None:
            self._compact_incoming(*incoming)
        return {keys[k]: t for k, t in found.items()}

    def put_many(self, identity: str, src_lang: str, tgt_lang: str, pairs: Iterable[tuple[str, str]]) -> None:
        """Store ``(source, translation)`` pairs as one file (one committed batch)."""
        rows = [(segment_key(identity, src_lang, tgt_lang, s), t) for s, t in pairs]
        if not rows:
            return
        cf.write_segments(self.root / INCOMING, self._name(), rows, durable=False)
        self._puts += 1
        if self._puts % max(1, self.compact_at // 8) == 0:  # now and then: is incoming/ due to be distributed?
            files = cf.list_segments(self.root / INCOMING)
            if len(files) > self.compact_at:
                self._compact_incoming(*self._read_all(files))

    def close(self) -> None:
        """Distribute this writer's own files of ``incoming/`` into the buckets; report damaged files."""
        if self._puts:
            own = [p for p in cf.list_segments(self.root / INCOMING) if p.name.startswith(f"{self.writer}-")]
            self._compact_incoming(*self._read_all(own))
            self._puts = 0
        if self.damaged:
            log.warning("translation cache %s: %d damaged file(s) skipped (moved to %s): %s", self.root,
                        len(self.damaged), self.root / DAMAGED, ", ".join(sorted(self.damaged)))

    def __len__(self) -> int:
        found: dict[str, str] = {}
        self._scan(self.root / INCOMING, None, found, keep_all=None)
        for entry in sorted(os.listdir(self.root)):
            if len(entry) == 2 and (self.root / entry).is_dir():
                self._scan(self.root / entry, None, found, keep_all=None)
        return len(found)

    # --- reading ---------------------------------------------------------------------------------------
    def _scan(self, folder: Path, wanted: set[str] | None, found: dict[str, str],
              keep_all: int | None) -> tuple[list[Path], list[tuple[str, str]]] | None:
        """Add the records of ``folder``'s files whose key is ``wanted`` (None: all) to ``found``. A file gone
        meanwhile (merged by a compaction) makes the folder be listed again (the merged file is in place
        before the files it merged are removed). ``keep_all``: merge the folder when more than this many files
        were read. For ``incoming/`` (``keep_all`` None) return the files read and all their records when there
        are more than ``compact_at``, for the caller to distribute them."""
        seen: set[Path] = set()
        read: list[Path] = []
        records: list[tuple[str, str]] = []
        for _ in range(100):  # each round only follows a compaction that ran meanwhile
            files = [p for p in cf.list_segments(folder) if p not in seen]
            vanished = False
            for path in files:
                seen.add(path)
                try:
                    recs = cf.read_segments(path)
                except FileNotFoundError:
                    vanished = True
                    continue
                except (cf.DamagedFile, ValueError) as err:
                    self._set_aside(path, getattr(err, "why", str(err)))
                    continue
                read.append(path)
                records.extend(recs)
                for k, t in recs:
                    if wanted is None or k in wanted:
                        found[k] = min(found.get(k, t), t)
            if not vanished:
                break
        if folder.name == INCOMING:
            return (read, records) if len(read) > self.compact_at else None
        if keep_all is not None and len(read) > keep_all:
            self._merge_bucket(folder, read, records)
        return None

    def _read_all(self, files: Sequence[Path]) -> tuple[list[Path], list[tuple[str, str]]]:
        read, records = [], []
        for path in files:
            try:
                records.extend(cf.read_segments(path))
                read.append(path)
            except FileNotFoundError:
                continue  # merged by another process
            except (cf.DamagedFile, ValueError) as err:
                self._set_aside(path, getattr(err, "why", str(err)))
        return read, records

    def _set_aside(self, path: Path, why: str) -> None:
        if str(path) not in self.damaged:
            log.warning("translation cache: skipping damaged file %s (%s); its segments are translated again",
                        path, why)
        self.damaged[str(path)] = why
        (self.root / DAMAGED).mkdir(exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.rename(path, self.root / DAMAGED / f"{path.parent.name}-{path.name}")

    # --- writing and merging ---------------------------------------------------------------------------
    def _name(self) -> str:
        self._seq += 1
        return f"{self.writer}-{self._seq:08d}{cf.SUFFIX}"

    def _write_buckets(self, records: Iterable[tuple[str, str]]) -> None:
        """Write ``records`` as one new file per bucket (the smallest translation of a key kept)."""
        per: dict[str, dict[str, str]] = {}
        for k, t in records:
            d = per.setdefault(bucket(k), {})
            d[k] = min(d.get(k, t), t)
        for b, rows in sorted(per.items()):
            (self.root / b).mkdir(exist_ok=True)
            cf.write_segments(self.root / b, self._name(), sorted(rows.items()))

    def _compact_incoming(self, read: list[Path], records: list[tuple[str, str]]) -> None:
        if not read:
            return
        self._write_buckets(records)  # in place before the files it holds are removed
        for path in read:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        cf.remove_stale_temporaries(self.root / INCOMING)

    def _merge_bucket(self, folder: Path, read: list[Path], records: list[tuple[str, str]]) -> None:
        self._write_buckets(records)
        for path in read:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        cf.remove_stale_temporaries(folder)

    # --- format and migration --------------------------------------------------------------------------
    def _check_format(self) -> None:
        path = self.root / FORMAT_FILE
        want = {"format": cf.FORMAT, "version": cf.VERSION}
        try:
            have = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            atomic_write_json(path, {**want, "layout": "incoming/ and 256 buckets <xx>/ of <writer>-<n>.seg files"})
            return
        except ValueError:
            log.warning("translation cache: %s is damaged; rewriting it", path)
            atomic_write_json(path, want)
            return
        if not isinstance(have, dict) or have.get("format") != cf.FORMAT or have.get("version") != cf.VERSION:
            raise ConfigError(f"{path}: a translation cache of another format or version ({have!r}); this xlt "
                              f"writes {want}: point translate.cache_dir at another folder")

    def _migrate(self, legacy: Path) -> None:
        """Copy the rows of an old SQLite cache into the folder, once per state of that file (read-only)."""
        st = legacy.stat()
        marker = self.root / f"migrated-{legacy.name}.json"
        state = {"from": str(legacy), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        with contextlib.suppress(FileNotFoundError, ValueError):
            done = json.loads(marker.read_text(encoding="utf-8"))
            if {k: done.get(k) for k in state} == state:
                return
        rows = 0
        try:
            db = sqlite3.connect(f"file:{legacy}?mode=ro", uri=True, timeout=120)
            try:
                cur = db.execute("SELECT key, target FROM segments")
                while batch := cur.fetchmany(_MIGRATE_ROWS):
                    self._write_buckets((str(k), str(t)) for k, t in batch)
                    rows += len(batch)
            finally:
                db.close()
        except sqlite3.Error as err:
            self.damaged[str(legacy)] = str(err)
            log.warning("translation cache: the old SQLite cache %s cannot be read (%s); %d rows copied, the "
                        "others are translated again", legacy, err, rows)
            return
        atomic_write_json(marker, {**state, "rows": rows})
        log.info("translation cache: copied %d segments of the old SQLite cache %s into %s (the file is left as "
                 "it was; it may be removed)", rows, legacy, self.root)
