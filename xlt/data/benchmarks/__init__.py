"""Evaluation benchmarks: the registry from ``kind`` (``eval.benchmarks.<name>.kind``) to a definition.

A benchmark is one module with a :class:`~xlt.data.benchmarks.base.Benchmark` subclass (its loading as code, its
prompt and report as data: :mod:`xlt.data.benchmarks.declarations`): xlt's own are
registered by one line in :data:`xlt.registry.BENCHMARKS`; others come from an installed package's entry
point (group ``xlt.benchmarks``) or a folder of definition files (``eval.include_path``).
"""

from __future__ import annotations

from xlt.data.benchmarks.base import Benchmark
from xlt.registry import BENCHMARKS


def get_benchmark(kind: str) -> Benchmark:
    """The registered benchmark for ``kind``; an unknown kind raises :class:`ConfigError`."""
    return BENCHMARKS.get_entry(kind)


__all__ = ["BENCHMARKS", "Benchmark", "get_benchmark"]
