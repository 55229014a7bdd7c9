"""The segment cache on shared storage: writers in separate processes (as on other hosts) at once, a reader
that sees every writer's segments, a writer killed mid-batch, damaged files, an old SQLite cache, and a
lookup that reads only the buckets of its keys (xlt.translation.cache)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from xlt.translation import cache_files as cf
from xlt.translation.cache import DAMAGED, INCOMING, TranslationCache, bucket, legacy_path, segment_key

ID = "hf/{\"dtype\": \"float32\", \"model\": \"m\"}"

# A writer process: waits for the start file, then commits `batches` batches of 5 segments (3 of its own, 2
# shared by every writer, with the same translation), closes, and prints the texts it committed.
WRITER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from xlt.translation.cache import TranslationCache
    from xlt.translation.cache_files import writer_id
    root, host, batches, start, uts = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]), sys.argv[5]
    while not start.exists():
        time.sleep(0.01)
    cache = TranslationCache(root, writer=writer_id(None if uts == "uts" else host), compact_at=4, merge_at=4)
    done = []
    for b in range(batches):
        pairs = [(f"{host} {b} {i}", f"T({host} {b} {i})") for i in range(3)]
        pairs += [(f"shared {b} {i}", f"T(shared {b} {i})") for i in range(2)]
        cache.put_many(@ID@, "eng_Latn", "fra_Latn", pairs)
        done += [s for s, _ in pairs]
    cache.close()
    print(json.dumps({"done": done, "writer": cache.writer, "damaged": cache.damaged}))
""").replace("@ID@", repr(ID))


def _writer(root: Path, host: str, batches: int, start: Path, uts: bool = False) -> subprocess.Popen:
    cmd = [sys.executable, "-c", WRITER, str(root), host, str(batches), str(start), "uts" if uts else "arg"]
    if uts:  # a real second host name: its own UTS namespace, the writer names itself by gethostname()
        cmd = ["unshare", "--uts", "sh", "-c", f'hostname {host} && exec "$@"', "sh", *cmd]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})


def _texts(hosts: list[str], batches: int) -> list[str]:
    own = [f"{h} {b} {i}" for h in hosts for b in range(batches) for i in range(3)]
    return own + [f"shared {b} {i}" for b in range(batches) for i in range(2)]


def _run_writers(root: Path, tmp_path: Path, hosts: list[str], batches: int, uts: bool = False) -> list[dict]:
    start = tmp_path / "start"
    procs = [_writer(root, h, batches, start, uts) for h in hosts]
    reader = TranslationCache(root, compact_at=4, merge_at=4)
    texts = _texts(hosts, batches)
    start.touch()
    seen: set[str] = set()
    while any(p.poll() is None for p in procs):  # a reader while they write and merge: it never loses a segment
        now = reader.get_many(ID, "eng_Latn", "fra_Latn", texts)
        assert seen <= set(now), f"segments vanished while writers merged: {sorted(seen - set(now))[:5]}"
        assert all(t == f"T({s})" for s, t in now.items())
        seen = set(now)
    outs = []
    for p in procs:
        out, err = p.communicate()
        assert p.returncode == 0, err
        outs.append(json.loads(out))
    assert reader.damaged == {}
    return outs


def test_writers_on_many_hosts_and_a_reader_that_sees_them_all(tmp_path):
    root = tmp_path / "cache"
    hosts = ["gpu-a100-01", "gpu-v100-07", "login.cluster", "node 4"]
    outs = _run_writers(root, tmp_path, hosts, batches=30)
    assert len({o["writer"] for o in outs}) == len(hosts)
    assert all(o["damaged"] == {} for o in outs)
    texts = _texts(hosts, 30)
    with TranslationCache(root) as cache:
        found = cache.get_many(ID, "eng_Latn", "fra_Latn", texts)
        assert found == {t: f"T({t})" for t in texts}
        assert len(cache) == len(set(texts))
    # Each writer distributed its own incoming files when it closed; the names say which host wrote them.
    assert cf.list_segments(root / INCOMING) == []
    names = {p.name for p in root.glob("??/*.seg")}
    assert any(n.startswith("gpu-v100-07-") for n in names) or any(n.startswith("node_4-") for n in names)


def _unshare_works() -> bool:
    try:
        return subprocess.run(["unshare", "--uts", "sh", "-c", "hostname xlt-probe"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@pytest.mark.skipif(shutil.which("unshare") is None or not _unshare_works(),
                    reason="needs unshare --uts (root or user namespaces) for a second host name")
def test_writers_in_other_uts_namespaces(tmp_path):
    root = tmp_path / "cache"
    hosts = ["xlt-node-a", "xlt-node-b", "xlt-node-c"]
    outs = _run_writers(root, tmp_path, hosts, batches=10, uts=True)
    # named by their own gethostname() ("-" separates the parts of a writer name)
    assert sorted(o["writer"].rsplit("-", 2)[0] for o in outs) == [h.replace("-", "_") for h in hosts]
    with TranslationCache(root) as cache:
        texts = _texts(hosts, 10)
        assert cache.get_many(ID, "eng_Latn", "fra_Latn", texts) == {t: f"T({t})" for t in texts}


KILLED = textwrap.dedent("""
    import os, signal, sys
    from xlt.translation.cache import TranslationCache
    cache = TranslationCache(sys.argv[1], writer="killed-host-1-abcd")
    real, calls = os.rename, [0]
    def rename(a, b):  # the 5th batch's file is written, not yet renamed, when the process is killed
        calls[0] += 1
        if calls[0] == 5:
            os.kill(os.getpid(), signal.SIGKILL)
        real(a, b)
    os.rename = rename
    for b in range(8):
        cache.put_many(@ID@, "eng_Latn", "fra_Latn", [(f"b{b} s{i}", f"T{b}.{i}") for i in range(4)])
""").replace("@ID@", repr(ID))


def test_a_writer_killed_mid_batch_loses_that_batch_only(tmp_path):
    root = tmp_path / "cache"
    p = subprocess.run([sys.executable, "-c", KILLED, str(root)], capture_output=True, text=True)
    assert p.returncode == -9, p.stderr
    leftovers = [n for n in os.listdir(root / INCOMING) if n.endswith(".tmp")]
    assert len(leftovers) == 1  # the half-committed batch, under its temporary name
    with TranslationCache(root) as cache:
        texts = [f"b{b} s{i}" for b in range(8) for i in range(4)]
        found = cache.get_many(ID, "eng_Latn", "fra_Latn", texts)
        assert sorted(found) == sorted(f"b{b} s{i}" for b in range(4) for i in range(4))
        assert cache.damaged == {}


def test_a_truncated_file_is_named_skipped_and_counted(tmp_path, caplog):
    root = tmp_path / "cache"
    texts = [f"s{i}" for i in range(40)]
    with TranslationCache(root) as cache:
        for i in range(0, 40, 8):
            cache.put_many(ID, "eng_Latn", "fra_Latn", [(t, t.upper()) for t in texts[i:i + 8]])
    victim = sorted(root.glob("??/*.seg"))[0]
    lost = {k for k, _ in cf.read_segments(victim)}
    victim.write_bytes(victim.read_bytes()[:-7])  # a write cut short (a full disk)
    caplog.set_level(logging.WARNING)
    with TranslationCache(root) as cache:
        found = cache.get_many(ID, "eng_Latn", "fra_Latn", texts)  # no exception: the run goes on
        assert {segment_key(ID, "eng_Latn", "fra_Latn", t) for t in found} == \
            {segment_key(ID, "eng_Latn", "fra_Latn", t) for t in texts} - lost
        assert list(cache.damaged) == [str(victim)]
        assert str(victim) in caplog.text
        cache.put_many(ID, "eng_Latn", "fra_Latn", [(t, t.upper()) for t in texts if t not in found])
    assert (root / DAMAGED / f"{victim.parent.name}-{victim.name}").exists()  # set aside, out of the lookups
    with TranslationCache(root) as cache:
        assert cache.get_many(ID, "eng_Latn", "fra_Latn", texts) == {t: t.upper() for t in texts}
        assert cache.damaged == {}


def test_a_foreign_file_in_a_bucket_is_skipped(tmp_path):
    root = tmp_path / "cache"
    with TranslationCache(root) as cache:
        cache.put_many(ID, "eng_Latn", "fra_Latn", [("a", "A")])
        key = segment_key(ID, "eng_Latn", "fra_Latn", "a")
        (root / bucket(key)).mkdir(exist_ok=True)  # the segment is still in incoming/
        (root / bucket(key) / "notes.seg").write_text("not a cache file\n")
        assert cache.get_many(ID, "eng_Latn", "fra_Latn", ["a"]) == {"a": "A"}
        assert list(cache.damaged) == [str(root / bucket(key) / "notes.seg")]


def test_a_lookup_reads_only_incoming_and_its_buckets(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    texts = [f"segment {i}" for i in range(300)]
    with TranslationCache(root) as cache:
        cache.put_many(ID, "eng_Latn", "fra_Latn", [(t, t[::-1]) for t in texts])
    assert len(list(root.glob("??"))) > 100  # spread over the buckets
    read: list[Path] = []
    real = cf.read_segments
    monkeypatch.setattr(cf, "read_segments", lambda p: read.append(p) or real(p))
    with TranslationCache(root) as cache:
        assert cache.get_many(ID, "eng_Latn", "fra_Latn", ["segment 7"]) == {"segment 7": "7 tnemges"}
    want = bucket(segment_key(ID, "eng_Latn", "fra_Latn", "segment 7"))
    assert read and {p.parent.name for p in read} <= {want, INCOMING}


def test_merging_keeps_one_translation_per_key_whatever_the_order(tmp_path):
    root = tmp_path / "cache"
    for order in (("x", "y"), ("y", "x")):
        shutil.rmtree(root, ignore_errors=True)
        for t in order:  # two shards translated the same segment in differently shaped batches
            with TranslationCache(root, compact_at=1, merge_at=1) as cache:
                cache.put_many(ID, "eng_Latn", "fra_Latn", [("same", t)])
        with TranslationCache(root, compact_at=1, merge_at=1) as cache:
            assert cache.get_many(ID, "eng_Latn", "fra_Latn", ["same"]) == {"same": "x"}
            assert cache.get_many(ID, "eng_Latn", "fra_Latn", ["same"]) == {"same": "x"}  # after merging
        assert len(list(root.glob("??/*.seg"))) == 1


def _old_sqlite(path: Path, rows: list[tuple[str, str, str, str, str]]) -> None:
    """An SQLite cache as xlt wrote it before (WAL mode, the same keys)."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE segments (key TEXT PRIMARY KEY, translator TEXT NOT NULL, src_lang TEXT NOT NULL, "
               "tgt_lang TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL)")
    with db:
        db.executemany("INSERT INTO segments VALUES (?, ?, ?, ?, ?, ?)",
                       [(segment_key(i, s, t, x), i, s, t, x, y) for i, s, t, x, y in rows])
    db.close()


def test_an_old_sqlite_cache_keeps_its_hits(tmp_path):
    root = tmp_path / "translation_cache"
    old = legacy_path(root)
    assert old.name == "translation_cache.sqlite"
    _old_sqlite(old, [(ID, "eng_Latn", "fra_Latn", "hello", "bonjour"), (ID, "eng_Latn", "deu_Latn", "hello", "hallo")])
    before = old.read_bytes()
    with TranslationCache(root) as cache:
        assert cache.get_many(ID, "eng_Latn", "fra_Latn", ["hello", "cat"]) == {"hello": "bonjour"}
        assert cache.get_many(ID, "eng_Latn", "deu_Latn", ["hello"]) == {"hello": "hallo"}
    assert old.read_bytes() == before  # read only, left as it was
    files = sorted(root.rglob("*.seg"))
    with TranslationCache(root) as cache:  # copied once
        assert len(cache) == 2
    assert sorted(root.rglob("*.seg")) == files


def test_an_unreadable_old_sqlite_cache_does_not_stop_the_run(tmp_path):
    root = tmp_path / "translation_cache"
    legacy_path(root).write_bytes(b"this is not a database" * 100)
    with TranslationCache(root) as cache:
        assert cache.get_many(ID, "eng_Latn", "fra_Latn", ["a"]) == {}
        assert list(cache.damaged) == [str(legacy_path(root))]
        cache.put_many(ID, "eng_Latn", "fra_Latn", [("a", "A")])
        assert cache.get_many(ID, "eng_Latn", "fra_Latn", ["a"]) == {"a": "A"}
