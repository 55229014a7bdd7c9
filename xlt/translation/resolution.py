"""A run's translator, resolved once: ``data/translator.json``.

``translate.engine=auto``, ``precision=auto`` and ``compute_type=auto`` resolve on the machine that runs
(:meth:`xlt.translation.engines.base.Engine.resolved`): bf16 on an A100 / H100, float32 on a V100, a T4 or a
CPU; ctranslate2 where it is installed. What they resolve to enters the translations' hashes and the segment
cache's keys. Resolved again on every node, shards on other GPU models, requeues and ``xlt status`` on a login
node would disagree: finished parts discarded as made "from other inputs", cache misses, runs called stale.

So the first process that runs the translate stage (or translate-test) of a run resolves the translator and
records the result (:func:`pin`, under the run's lock ``data/.translator.lock``, created with a hard link: of
two shards starting together on different hosts exactly one record wins). Every later shard, requeue and
reader (the stage's input hash, :func:`xlt.cluster.status` on a login node) reads the record instead
(:func:`resolve`), and the translator is built as recorded (:func:`pinned_config`). A process whose machine
cannot run the recorded dtype or compute type stops with a message that says so and what to do
(:func:`check_machine`).

With ``translate.cache_dir`` (a segment cache shared between runs, as in the paper sweep) the first run to
resolve a set of settings also records it in the cache (``<cache>/translators/<digest>.json``, created once with
a hard link), and every later run sharing the cache adopts it: runs on other GPU models make the same cache keys
and hit each other's segments.

The record holds the requested settings it was resolved from (the ``translator`` keys of the ``translate``
group): a run whose settings change (another model, ``translate.precision=fp32``...) asks for another
translator, resolved again (its translations are redone). A run finished before the record existed adopts
the resolution its done-marker or its translation folder recorded, so upgrading xlt recomputes nothing.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import os
import socket
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from filelock import FileLock
from omegaconf import OmegaConf

from xlt.config.keys import translator_values
from xlt.errors import ConfigError, XltError
from xlt.run.files import atomic_write_json, create_temp_file, json_text
from xlt.run.layout import INPUTS_FILE, RunDir
from xlt.run.state import Damaged, read_state
from xlt.translation import engines

log = logging.getLogger(__name__)

RECORD = "translator.json"  # in the run's data/
LOCK = ".translator.lock"
SCHEMA = {"settings": dict, "resolved": dict, "host": str}
# translate.precision's spelling of a torch dtype (the transformers engine records the dtype).
PRECISION_OF = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def settings(translate: Any) -> dict[str, Any]:
    """The requested translator: the ``translator`` keys of ``translate`` section (as JSON gives them back)."""
    section = OmegaConf.to_container(translate, resolve=True) if OmegaConf.is_config(translate) else asdict(translate)
    return json.loads(json_text(translator_values({"translate": section}), indent=None))


def local(translate: Any) -> dict[str, Any]:
    """The translator resolved on this machine (an error as ``{"unresolved": message}``)."""
    try:
        return engines.resolved_settings(translate)
    except XltError as err:  # e.g. translate.device=cuda where no GPU is visible: the translator says so
        return {"unresolved": str(err).splitlines()[0]}


def pinned_kind(translate: Any) -> bool:
    """Whether the translator has settings resolved on the machine (``translate.kind=hf``: engine, dtype,
    compute type). Another kind (echo, a plug-in engine) is not pinned: what enters its hashes is its code's
    identity, which must follow an upgrade."""
    return str(translate.kind) == "hf"


def _complete(resolved: dict[str, Any]) -> bool:
    """Whether ``resolved`` pins what ``auto`` leaves open (an engine that could not be asked is not)."""
    return "unresolved" not in resolved and resolved.get("compute_type") != "auto"


def read(run: RunDir, translate: Any) -> dict[str, Any] | None:
    """The run's record if it was resolved from ``translate``'s translator settings (None: none, or another's)."""
    try:
        rec = read_state(run.data / RECORD, SCHEMA)
    except Damaged as err:
        log.warning("translate: %s; the translator is resolved again", err)
        return None
    return rec if rec is not None and rec["settings"] == settings(translate) else None


def _adopted(run: RunDir, translate: Any) -> dict[str, Any] | None:
    """The resolution a run finished or started before the record existed left in its translate or evaluate
    done-marker or its translation folder, when made from the same settings."""
    want = settings(translate)
    found: list[Any] = []
    with contextlib.suppress(Damaged, KeyError, TypeError, AttributeError):
        found.append(run.done_info("translate")["provenance"]["detail"]["files"]["translator"])
    with contextlib.suppress(Damaged, KeyError, TypeError, AttributeError):
        found.append(run.done_info("evaluate")["provenance"]["detail"]["files"]["translate_test"])
    with contextlib.suppress(Damaged, KeyError, TypeError, AttributeError):
        found.append((read_state(run.translated / INPUTS_FILE) or {})["detail"]["files"]["translator"])
    for evidence in found:
        if isinstance(evidence, dict) and evidence.get("settings") == want and isinstance(evidence.get("resolved"), dict) \
                and _complete(evidence["resolved"]):
            return evidence["resolved"]
    return None


def shared_record(translate: Any, run: RunDir) -> Path | None:
    """With ``translate.cache_dir`` (a cache shared between runs): the cache's record of these settings'
    resolution, ``<cache>/translators/<settings digest>.json``, so that every run sharing the cache resolves
    them as the first one did (the same cache keys on every node); None without a shared cache."""
    if not translate.cache_dir:
        return None
    name = hashlib.sha256(json_text(settings(translate), indent=None).encode("utf-8")).hexdigest()[:24]
    return run.translation_cache(translate.cache_dir) / "translators" / f"{name}.json"


def _read_shared(translate: Any, run: RunDir) -> dict[str, Any] | None:
    path = shared_record(translate, run)
    if path is None:
        return None
    try:
        rec = read_state(path, SCHEMA)
    except Damaged as err:
        log.warning("translate: %s; not used", err)
        return None
    return rec["resolved"] if rec is not None and rec["settings"] == settings(translate) else None


def resolve(translate: Any, run: RunDir | None) -> dict[str, Any]:
    """What the run's translator resolves to, for its hashes: the run's record (or a finished run's evidence, or
    the shared cache's record), else this machine's resolution (nothing is written: a reader such as ``xlt
    status`` never pins)."""
    if run is not None and pinned_kind(translate):
        rec = read(run, translate)
        if rec is not None:
            return rec["resolved"]
        found = _adopted(run, translate) or _read_shared(translate, run)
        if found is not None:
            return found
    return local(translate)


def _create_once(path: Path, record: dict[str, Any]) -> bool:
    """Create ``path`` holding ``record`` unless it exists (a hard link: atomic on NFS too, no lock needed);
    whether this call created it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = create_temp_file(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json_text(record))
            f.flush()
            os.fsync(f.fileno())
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def pin(translate: Any, run: RunDir) -> dict[str, Any]:
    """Resolve the run's translator once and record it (see the module docstring); return what it resolves to."""
    if not pinned_kind(translate):
        return local(translate)
    path = run.data / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path.parent / LOCK)):
        existed = path.exists()  # a record of other settings (or a damaged one) is replaced; else created once
        rec = read(run, translate)
        if rec is not None:
            return rec["resolved"]
        host = socket.gethostname()
        resolved, how = _adopted(run, translate), "adopted from the run's earlier record of its inputs"
        if resolved is None:
            resolved, how = _pin_shared(translate, run, host)
        if not _complete(resolved):
            return resolved  # the translator says why when it is built; nothing recorded
        record = {"settings": settings(translate), "resolved": resolved, "host": host, "pid": os.getpid(),
                  "time": time.time(), "how": how}
        if existed:  # settings changed (or a damaged record): another translator, resolved again
            log.info("translate: the translator settings changed; resolved again (%s): %s", how, resolved)
            atomic_write_json(path, record)
        elif not _create_once(path, record):  # another host's shard recorded first (no reliance on the lock)
            rec = read(run, translate)
            if rec is None:
                raise ConfigError(f"{path}: recorded by another process for other translator settings; the "
                                  "shards of one run must share their translate settings")
            return rec["resolved"]
    log.info("translate: translator resolved once for this run (%s, %s): %s", path, how, resolved)
    return resolved


def _pin_shared(translate: Any, run: RunDir, host: str) -> tuple[dict[str, Any], str]:
    """This machine's resolution, or with a shared cache the one its record holds (created here when absent)."""
    shared = shared_record(translate, run)
    found = _read_shared(translate, run)
    if found is not None:
        return found, f"adopted from the shared cache's record {shared}"
    resolved = local(translate)
    if shared is None or not _complete(resolved):
        return resolved, f"resolved on {host}"
    if _create_once(shared, {"settings": settings(translate), "resolved": resolved, "host": host, "pid": os.getpid(),
                             "time": time.time(), "how": f"resolved on {host}"}):
        return resolved, f"resolved on {host}"
    found = _read_shared(translate, run)  # another run recorded first
    return (found, f"adopted from the shared cache's record {shared}") if found else (resolved, f"resolved on {host}")


def pinned_config(tcfg: Any, resolved: dict[str, Any]) -> Any:
    """A copy of ``translate`` section ``tcfg`` whose ``auto`` engine, precision and compute type are the
    recorded ones (``tcfg`` itself when nothing is pinned: another kind, an unresolved translator)."""
    if str(tcfg.kind) != "hf" or not _complete(resolved):
        return tcfg
    out = copy.deepcopy(tcfg)
    if resolved.get("engine") == "hf" and resolved.get("dtype") in PRECISION_OF:
        out.engine, out.precision = "transformers", PRECISION_OF[resolved["dtype"]]
    elif resolved.get("engine") == "ctranslate2" and resolved.get("compute_type"):
        out.engine, out.compute_type, out.precision = "ctranslate2", resolved["compute_type"], "auto"
    return out


def check_machine(tcfg: Any, resolved: dict[str, Any], run: RunDir) -> None:
    """A :class:`ConfigError` when this machine cannot run the translator as the run recorded it."""
    if str(tcfg.kind) != "hf" or not _complete(resolved):
        return
    where = f"this run's translator was resolved once, as {resolved} ({run.data / RECORD})"
    fix = ("run this job on a node that can (a GPU partition / --constraint of the GPU model that started the "
           "run), or set translate.precision / translate.compute_type explicitly: another translator, whose "
           "translations are all made again")
    if resolved.get("engine") == "hf":
        dtype = resolved.get("dtype")
        device = engines.base.pick_device(str(tcfg.device))
        if dtype == "bfloat16" and device.startswith("cuda"):
            import torch

            if not torch.cuda.is_bf16_supported():
                name = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
                raise ConfigError(f"translate: {where}; this node's GPU ({name}) does not support bfloat16: {fix}")
        if dtype != "float32" and device == "cpu":
            log.warning("translate: %s; this node translates on the CPU in %s (slower than on the GPU it was "
                        "resolved on, the same translations)", where, dtype)
        return
    if resolved.get("engine") == "ctranslate2":
        if not engines.ct2.available():
            raise ConfigError(f"translate: {where}; ctranslate2 is not installed here: pip install "
                              f"ctranslate2=={resolved.get('ctranslate2')} (or {fix})")
        import ctranslate2

        if resolved.get("ctranslate2") and ctranslate2.__version__ != resolved["ctranslate2"]:
            raise ConfigError(f"translate: {where}; this node has ctranslate2 {ctranslate2.__version__}: install "
                              f"ctranslate2=={resolved['ctranslate2']} in the environment every job of the run uses")
        device, ids = engines.ct2.parse_device(str(tcfg.device))
        supported = set(ctranslate2.get_supported_compute_types(device, ids[0]))
        if resolved["compute_type"] not in supported:
            raise ConfigError(f"translate: {where}; {device} here runs only {sorted(supported)}: {fix}")
