"""What every entry point does first, on import (``xlt/cli.py`` imports this module before anything else): CPython's
full garbage collections made rarer.

An entry point (``python -m xlt.train``, a rank under ``accelerate launch``, a job's stage) imports torch,
transformers and datasets: millions of objects that live as long as the process. CPython's generational collector
scans all of them at every full collection, which its default thresholds (700, 10, 10) start each time the
long-lived objects have grown by a quarter: about 15% of the imports' CPU time (0.6-0.9 CPU-s of each process's
start, measured by ``benchmarks/startup_bench.py``), paid again by every rank, every stage job and every requeued
incarnation.

:func:`collect_less_often` raises only the third threshold (10 -> 100): young objects are collected as often as
before, so the reference cycles a training or scoring loop makes are still freed within the same steps; a full
collection needs ten times as many collections of the middle generation before it.
"""

from __future__ import annotations

import gc

FULL_COLLECTION_EVERY = 100  # collections of the middle generation (CPython's default: 10)


def collect_less_often() -> None:
    """Full collections a tenth as often (the first two thresholds as they are)."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)


collect_less_often()
