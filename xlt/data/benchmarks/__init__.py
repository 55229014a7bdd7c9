"""Evaluation benchmarks: a registry from ``kind`` (``eval.benchmarks.<name>.kind``) to a loader.

Add a benchmark by writing one module with a :class:`~xlt.data.benchmarks.base.Benchmark` subclass and
registering an instance here.
"""

from __future__ import annotations

from xlt.data.benchmarks.base import Benchmark
from xlt.data.benchmarks.belebele import Belebele
from xlt.data.benchmarks.global_mmlu import GlobalMMLU
from xlt.data.benchmarks.xcopa import XCOPA
from xlt.errors import ConfigError

BENCHMARKS: dict[str, Benchmark] = {
    "belebele": Belebele(),
    "global_mmlu": GlobalMMLU("global_mmlu", "CohereLabs/Global-MMLU"),
    "global_mmlu_lite": GlobalMMLU("global_mmlu_lite", "CohereLabs/Global-MMLU-Lite", lite=True),
    "xcopa": XCOPA(),
}


def get_benchmark(kind: str) -> Benchmark:
    """The registered benchmark for ``kind``; an unknown kind raises :class:`ConfigError`."""
    try:
        return BENCHMARKS[kind]
    except KeyError:
        raise ConfigError(f"unknown benchmark kind {kind!r}; registered kinds: {sorted(BENCHMARKS)}") from None


__all__ = ["BENCHMARKS", "Benchmark", "get_benchmark"]
