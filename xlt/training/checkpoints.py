"""Complete checkpoints only: a completeness marker written last, and resuming from the newest sound one.

The Trainer writes a checkpoint as many files (weights, ``optimizer.pt``, ``scheduler.pt``,
``rng_state*.pth``, ``trainer_state.json``); a job killed or preempted while it saves leaves some of
them missing or truncated, and resuming from that folder fails with a traceback or, worse, silently
starts a fresh scheduler. So after every save :class:`CompletenessMarker` (a ``TrainerCallback``; the
Trainer calls ``on_save`` once the checkpoint is written) records every file with its size and SHA-256 in
``xlt_complete.json``, written last and atomically. A checkpoint counts only when that record is there
and every file it lists is present with that content, and the files a resume needs (optimizer, scheduler,
RNG, trainer state, weights) are among them. :func:`settle` moves every other ``checkpoint-N`` to
``stale/`` with a warning; training resumes from the newest complete one, or starts fresh and says so.

Rotation (``training.save_total_limit``) is xlt's, not the Trainer's: the Trainer deletes old checkpoints
inside its save, *before* ``on_save``, so a job killed while the record of the new checkpoint is being
computed would be left with no complete checkpoint but (at best) the best one. xlt turns the Trainer's
rotation off and :func:`prune` runs in the completeness callback, after the new record is written: the
newest ``save_total_limit`` checkpoints and the best one are kept. A pruned checkpoint is first renamed to a
hidden ``.pruning-checkpoint-N`` (one atomic rename: it stops being a checkpoint at once), then deleted; a
kill in between leaves only that hidden folder, removed on the next prune or :func:`settle`. A deletion that
fails (a file still open on NFS, ``.nfs*``; a quota; an immutable file) is logged and retried at the next
save: pruning never stops training.

Under several ranks the record holds the files every rank wrote, not what one node's listing shows (on NFS,
files that other nodes have just written can be missing from rank 0's listing for a while: attribute
caching): after a barrier (every rank's files written) each rank lists the checkpoint as its node sees it,
the listings are gathered (``all_gather_object``), each file is hashed by the lowest rank that sees it, and
rank 0 writes the union; a second barrier keeps every rank in ``on_save`` until the record is written,
however long hashing takes (a checkpoint of gigabytes on network storage). A rank that left first would let
its launcher (torch-elastic) kill rank 0 mid-record 30 s later when the save was for a preemption.
``XLT_TEST_HASH_DELAY=S[@STEP]`` (tests only) makes rank 0 wait S seconds before writing the record (of step
STEP only).

A resume verifies the checkpoints once: :func:`settle` (rank 0, in the train stage's set-up) hashes them and
returns the newest complete one, which the train step resumes from without hashing again.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

from xlt.run.files import atomic_write_json, follow_umask
from xlt.run.fingerprint import file_sha256
from xlt.run.layout import CHECKPOINT_COMPLETE_FILE
from xlt.run.state import Damaged, read_state

log = logging.getLogger("xlt.training")

COMPLETE_FILE = CHECKPOINT_COMPLETE_FILE  # the run directory layout's name (xlt.run)
_NAME = re.compile(r"checkpoint-(\d+)")
WEIGHTS = ("model.safetensors", "adapter_model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")



def _names(folder: Path) -> list[str]:
    """The files of a checkpoint as this node sees them (relative paths; no record, no hidden files)."""
    found = []
    for dirpath, _, names in os.walk(folder):
        for name in names:
            rel = (Path(dirpath) / name).relative_to(folder).as_posix()
            if rel != COMPLETE_FILE and not name.startswith("."):
                found.append(rel)
    return sorted(found)


def _entry(path: Path) -> dict[str, Any]:
    return {"size": path.stat().st_size, "sha256": file_sha256(path)}


def _listing(folder: Path) -> dict[str, dict[str, Any]]:
    return {rel: _entry(folder / rel) for rel in _names(folder)}


def _gather(obj: Any) -> list[Any]:
    """``obj`` of every rank, in rank order (``all_gather_object``; ``[obj]`` when not distributed)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return [obj]
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def _rank() -> int:
    import torch.distributed as dist

    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def every_ranks_files(folder: Path) -> dict[str, dict[str, Any]]:
    """A collective (every rank calls it): every file any rank sees in ``folder``, with its size and hash.

    Each rank lists the folder as its node sees it; a file is hashed by the lowest rank that sees it (rank 0
    for every file it sees: one node's ranks share the work as before), so a file that another node wrote and
    rank 0's listing does not show yet is recorded by that node."""
    views = _gather(_names(folder) if folder.is_dir() else [])
    me, owner = _rank(), {}
    for rank, names in enumerate(views):
        for rel in names:
            owner.setdefault(rel, rank)
    mine = {}
    for rel, rank in owner.items():
        if rank == me:
            try:
                mine[rel] = _entry(folder / rel)
            except OSError as err:  # gone since the listing (it cannot be: the barrier is before)
                log.warning("checkpoint file %s could not be hashed: %s", folder / rel, err)
    merged: dict[str, dict[str, Any]] = {}
    for entries in _gather(mine):
        merged.update(entries)
    return dict(sorted(merged.items()))


def _test_delay(folder: Path) -> None:
    """The ``XLT_TEST_HASH_DELAY`` hook (see the module docstring): a slow hash of a large checkpoint."""
    value = os.environ.get("XLT_TEST_HASH_DELAY")
    if not value:
        return
    seconds, _, step = value.partition("@")
    if not step or folder.name == f"checkpoint-{step}":
        log.warning("XLT_TEST_HASH_DELAY: hashing %s takes %s s more", folder, seconds)
        time.sleep(float(seconds))


def mark_complete(folder: str | os.PathLike[str], files: dict[str, dict[str, Any]] | None = None) -> None:
    """Record ``folder`` as a complete checkpoint (every file, size and hash), last, atomically; ``files``: the
    files every rank wrote (:func:`every_ranks_files`), else this node's listing."""
    folder = Path(folder)
    _test_delay(folder)
    follow_umask(folder)  # the Trainer's safetensors files are written owner-only (xlt.run.files.follow_umask)
    atomic_write_json(folder / COMPLETE_FILE, {"files": _listing(folder) if files is None else files,
                                               "time": time.time()})


def checkpoint_problem(folder: str | os.PathLike[str], hashes: bool = True) -> str | None:
    """Why ``folder`` is not a complete checkpoint (None: it is); ``hashes=False`` checks names and sizes
    only (no reading of gigabytes)."""
    folder = Path(folder)
    if not folder.is_dir():
        return "it is not there (removed or set aside)"
    try:
        record = read_state(folder / COMPLETE_FILE, {"files": dict})
    except Damaged as err:
        return f"its completeness record is damaged ({err.why})"
    if record is None:
        return f"no completeness record ({COMPLETE_FILE}): the save did not finish"
    files = record["files"]
    names = set(files)
    deepspeed = any(n.startswith("global_step") for n in names)
    needed = ["trainer_state.json"] + ([] if deepspeed else ["optimizer.pt", "scheduler.pt"])
    missing = [n for n in needed if n not in names]
    if not any(n.startswith("rng_state") for n in names):
        missing.append("rng_state.pth")
    if not deepspeed and not any(n in names for n in WEIGHTS):
        missing.append("model weights")
    if missing:
        return f"the save left no {', '.join(missing)}"
    for rel, meta in files.items():
        p = folder / rel
        if not p.is_file():
            return f"{rel} is missing"
        if not isinstance(meta, dict) or p.stat().st_size != meta.get("size"):
            return f"{rel} is truncated or rewritten (size {p.stat().st_size}, recorded {meta.get('size') if isinstance(meta, dict) else '?'})"
        if hashes and file_sha256(p) != meta.get("sha256"):
            return f"{rel} is damaged (its content no longer matches the record)"
    try:
        read_state(folder / "trainer_state.json", {"global_step": int, "log_history": list})
    except Damaged as err:
        return f"trainer_state.json is damaged ({err.why})"
    return None


def best_problem(folder: Path, best: str | None) -> str | None:
    """Why the best checkpoint ``best`` (a path; read as ``folder/<its name>``, so a copied run directory
    checks its own) cannot be loaded (None: it can, or there is none). Names and sizes, on every rank."""
    if not best:
        return None
    problem = checkpoint_problem(folder / Path(best).name, hashes=False)
    return f"{folder / Path(best).name}: {problem}" if problem else None


def checkpoints(folder: Path) -> list[Path]:
    """The ``checkpoint-N`` folders under ``folder``, newest first."""
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if _NAME.fullmatch(p.name)]
    return sorted(found, key=lambda p: int(p.name.split("-")[1]), reverse=True)


PRUNING = ".pruning-"


def _delete(path: Path) -> bool:
    """Delete a folder being pruned; a failure is logged (retried at the next prune), never raised."""
    try:
        shutil.rmtree(path)
        return True
    except OSError as err:
        log.warning("could not delete %s (%s: %s); it is retried at the next save, training goes on",
                    path, type(err).__name__, err)
        return False


def _remove_pruned(folder: Path) -> None:
    """Delete what an earlier prune left (hidden ``.pruning-checkpoint-N`` folders: killed or failed half-way)."""
    if folder.is_dir():
        for p in folder.iterdir():
            if p.name.startswith(PRUNING):
                _delete(p)


def prune(folder: Path, limit: int | None, current: str, best: str | None) -> list[str]:
    """Delete the checkpoints under ``folder`` beyond the newest ``limit`` (``current``, just recorded
    complete, among them), never ``current`` nor ``best`` (names, ``checkpoint-N``); return those deleted."""
    _remove_pruned(folder)
    if not limit:
        return []
    keep = {current, best}
    step = int(current.split("-")[1])
    found = [p for p in checkpoints(folder) if int(p.name.split("-")[1]) <= step]
    gone = []
    for p in found[limit:]:
        if p.name in keep:
            continue
        hidden = folder / f"{PRUNING}{p.name}"
        try:
            os.replace(p, hidden)  # no longer a checkpoint from here on, even if the deletion is cut short
        except OSError as err:
            log.warning("could not set %s aside for deletion (%s); retried at the next save", p, err)
            continue
        if _delete(hidden):
            gone.append(p.name)
    if gone:
        log.info("removed old checkpoint(s) %s (training.save_total_limit=%d, best %s kept)", ", ".join(gone), limit, best)
    return gone


def settle(folder: Path, stale_root: Path) -> str | None:
    """Move every incomplete or damaged checkpoint under ``folder`` to ``stale_root`` (warning each) and
    return the newest complete one; with checkpoints found but none complete, say training starts fresh."""
    _remove_pruned(folder)
    found = checkpoints(folder)
    best = None
    for p in found:
        problem = "a file where a checkpoint folder belongs" if not p.is_dir() else checkpoint_problem(p)
        if problem is None:
            best = best or str(p)
            continue
        if stale_root.exists() and not stale_root.is_dir():  # xlt's own area: a file there is removed
            log.warning("%s is a file where xlt keeps stale checkpoints: removed", stale_root)
            stale_root.unlink()
        stale_root.mkdir(parents=True, exist_ok=True)
        dest = stale_root / f"{p.name}-incomplete-{int(time.time() * 1000)}"
        os.replace(p, dest)
        log.warning("checkpoint %s is incomplete or damaged (%s): moved to %s", p, problem, dest)
    if found and best is None:
        log.warning("no complete checkpoint left in %s: training starts fresh", folder)
    return best


def completeness_callback(limit: int | None = None) -> Any:
    """A ``TrainerCallback`` writing the completeness record after each checkpoint save (main process),
    then pruning the checkpoints beyond ``limit`` (:func:`prune`)."""
    from transformers import TrainerCallback

    class CompletenessMarker(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            import torch.distributed as dist

            distributed = dist.is_available() and dist.is_initialized()
            if distributed:
                dist.barrier()  # every rank's files (RNG states, ZeRO shards) are written before the record
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            files = every_ranks_files(folder)  # every rank: the files each one sees, hashed once
            if state.is_world_process_zero:
                if folder.is_dir():
                    mark_complete(folder, files)
                    best = Path(state.best_model_checkpoint).name if state.best_model_checkpoint else None
                    prune(folder.parent, limit, folder.name, best)
            if distributed:
                dist.barrier()  # no rank leaves (a preemption: exits) before the record is written
            return control

        def on_step_end(self, args, state, control, **kwargs):
            # The loss is logged at every save: the log history of a checkpoint then covers every step before
            # it, and the mean training loss of a resumed run is that of an uninterrupted one
            # (:func:`xlt.training.trainer.mean_train_loss`). (A preemption's save: xlt.cluster does the same.)
            if control.should_save:
                control.should_log = True
            return control

    return CompletenessMarker()
