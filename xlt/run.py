"""The run directory: its name, stage markers and atomic writes.

A run directory is derived from the recipe and the command-line overrides (never the clock), so the
same command finds the same directory: finished stages are skipped, interrupted ones resume.

Layout::

    <run_root>/<recipe>/<overrides or "default">/
        .hydra/             resolved config (written by Hydra)
        config.yaml         the validated config of this run (secrets removed)
        stages/<stage>.json done-markers with a short summary per finished stage
        data/               build_data and translate outputs
        checkpoints/        resumable Trainer checkpoints
        model/              final model (safetensors) + model card
        eval/<benchmark>/   per-language results and predictions
        report.*, plots/    the report
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from xlt.config.keys import run_name  # noqa: F401  (re-exported: the run directory's name)
from xlt.errors import XltError


def shard(items: list, index: int, num: int) -> list:
    """Shard ``index`` (0-based) of ``num``: every ``num``-th item starting at ``index``, in the given order.

    The one rule both sharded stages use (translation units, evaluation jobs); the config checks
    ``0 <= index < num`` before any stage runs.
    """
    if num < 1 or not 0 <= index < num:
        raise ValueError(f"shard {index} of {num}: need 0 <= index < num")
    return items[index::num]


def is_main_process() -> bool:
    """True on rank 0 of a multi-process launch (and in a plain single process): the one that writes."""
    return int(os.environ.get("RANK", "0")) == 0


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


class RunDir:
    """Paths and stage bookkeeping of one run directory."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    def __truediv__(self, other: str) -> Path:
        return self.path / other

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    @property
    def data(self) -> Path:
        return self.path / "data"

    @property
    def train_set(self) -> Path:
        return self.path / "data" / "train_set"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def model(self) -> Path:
        return self.path / "model"

    @property
    def eval(self) -> Path:
        return self.path / "eval"

    def marker(self, stage: str) -> Path:
        return self.path / "stages" / f"{stage}.json"

    def is_done(self, stage: str) -> bool:
        return self.marker(stage).exists()

    def done_info(self, stage: str) -> dict[str, Any]:
        """The stage's done-marker, checked (:func:`xlt.state.read_state`): {} when absent;
        :class:`xlt.state.Damaged` when it is not a marker xlt wrote."""
        from xlt.state import MARKER, read_state

        return read_state(self.marker(stage), MARKER) or {}

    def mark_done(self, stage: str, info: dict[str, Any] | None = None) -> None:
        atomic_write_json(self.marker(stage), info or {})

    def clear(self, stage: str) -> None:
        remove_path(self.marker(stage))


def remove_path(path: str | os.PathLike[str]) -> None:
    """Remove a file, or a folder found where a file belongs (a damaged run directory)."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and an atomic rename."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir() and not path.is_symlink():  # a damaged run directory: a folder where the file belongs
            shutil.rmtree(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise WriteError(path, err) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
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
    """``obj`` with every non-finite float (NaN, inf: e.g. the accuracy of an empty subset) as None, so
    the JSON is strict (``null``) and any parser reads it."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    return obj


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as strict JSON (NaN -> null) atomically."""
    text = json.dumps(strict_json(obj), indent=2, ensure_ascii=False, sort_keys=False, allow_nan=False)
    atomic_write_text(path, text + "\n")


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary sibling folder; on success it replaces ``path`` in one rename.

    Use it for outputs written as folders (``save_to_disk``, ``save_pretrained``): readers never see
    a half-written folder, and a crash leaves the previous version (or nothing) in place.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
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
