"""Adaptive batch size for the GPU loops (MC scorer, LLM scorer and generation, translator).

:class:`AdaptiveBatcher` maps a batched function over items in consecutive slices. When a slice runs
out of memory (accelerate's ``should_reduce_batch_size``: CUDA/XPU/MPS/CPU allocator messages, plus
torch's own ``OutOfMemoryError``), the device cache is cleared (accelerate's ``clear_device_cache``),
the batch size halves and the same slice is retried; the slices already finished are kept, never
recomputed. The reduced size persists on the batcher, so the next language or benchmark starts at the
size that fitted. Unlike accelerate's ``find_executable_batch_size`` (which restarts the whole function
from the beginning), no finished work is lost.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

log = logging.getLogger("xlt.batching")

T = TypeVar("T")
R = TypeVar("R")


def is_oom(err: BaseException) -> bool:
    """Whether ``err`` is an out-of-memory error a smaller batch may avoid."""
    import torch
    from accelerate.utils.memory import should_reduce_batch_size

    return isinstance(err, torch.OutOfMemoryError) or (isinstance(err, Exception) and should_reduce_batch_size(err))


class AdaptiveBatcher:
    """Batch size that halves on out-of-memory and keeps finished batches (see the module docstring).

    ``reductions`` counts the halvings (recorded by the callers, e.g. in ``scorer_meta``)."""

    def __init__(self, batch_size: int, what: str = "batch") -> None:
        if int(batch_size) < 1:
            raise ValueError(f"batch size must be >= 1, got {batch_size}")
        self.batch_size = int(batch_size)
        self.what = what
        self.reductions = 0

    def map(self, fn: Callable[[list[T]], Sequence[R]], items: Sequence[T],
            on_batch: Callable[[list[T], Sequence[R]], Any] | None = None) -> list[R]:
        """``fn`` over consecutive slices of ``items`` (at most ``batch_size`` each), results in item order.

        ``fn`` returns one result per item of its slice. ``on_batch(slice, results)`` is called after
        each finished slice (progress bars, cache commits). An out-of-memory at batch size 1 is raised.
        """
        results: list[R] = []
        i = 0
        while i < len(items):
            chunk = list(items[i : i + self.batch_size])
            try:
                out = fn(chunk)
            except Exception as err:
                if self.batch_size == 1 or not is_oom(err):
                    raise
                self._reduce(len(chunk))
                continue
            if len(out) != len(chunk):
                raise ValueError(f"{self.what}: {len(out)} results for a batch of {len(chunk)}")
            results.extend(out)
            if on_batch is not None:
                on_batch(chunk, out)
            i += len(chunk)
        return results

    def _reduce(self, failed: int) -> None:
        from accelerate.utils.memory import clear_device_cache

        clear_device_cache(garbage_collection=True)
        self.batch_size = max(1, min(self.batch_size, failed) // 2)
        self.reductions += 1
        log.warning("%s: out of memory; retrying with batch size %d (finished batches kept)", self.what,
                    self.batch_size)
