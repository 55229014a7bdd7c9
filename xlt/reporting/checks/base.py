"""What a check kind gets and returns (:class:`Check`, :class:`Finding`), and the registry of check kinds.

A check kind is a function ``Check -> Finding`` registered under its name with :func:`check_kind`, in the
module that defines it (:mod:`xlt.reporting.checks`); a claim (:class:`~xlt.data.benchmarks.declarations.Claim`)
names it in ``check``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from xlt.data.benchmarks import Benchmark
from xlt.data.benchmarks.declarations import Claim
from xlt.errors import ConfigError
from xlt.reporting.systems import System
from xlt.reporting.tables import finding_prefix

HOLDS, FAILS, UNTESTABLE = "holds", "does not hold", "cannot be tested"


@dataclass
class Finding:
    id: str
    paper: str
    claim: str
    verdict: str
    why: str
    test: str = ""
    numbers: list[dict[str, Any]] = field(default_factory=list)
    paper_says: str = ""  # the paper's sentence, quoted or marked as a paraphrase (Claim.cited)
    needs: str = ""  # the systems and languages the check needs

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Check:
    """What a check kind gets: the systems compared, the benchmark whose claim it checks, the claim."""

    systems: list[System]
    groups: list[list[Any]]
    bench: Benchmark
    claim: Claim
    samples: int
    seed: int

    @property
    def id(self) -> str:
        return f"{finding_prefix(self.bench)}_{self.claim.id}"

    @property
    def title(self) -> str:
        return self.bench.title

    def param(self, key: str, default: Any = None) -> Any:
        if key not in self.claim.params and default is None:
            raise ConfigError(f"{self.bench.kind}: finding {self.claim.id!r} (check {self.claim.check!r}) needs "
                              f"the parameter {key!r}; it has {sorted(self.claim.params)}")
        return self.claim.params.get(key, default)

    def finding(self, verdict: str, why: str, test: str = "", numbers: list[dict[str, Any]] | None = None) -> Finding:
        return Finding(self.id, self.bench.paper, self.claim.text, verdict, why, test, numbers or [],
                       self.claim.cited(), self.claim.needs)

    def untestable(self, why: str) -> Finding:
        return self.finding(UNTESTABLE, why)


# The check kinds by name: filled by @check_kind where each is defined.
CHECKS: dict[str, Callable[[Check], Finding]] = {}


def check_kind(name: str) -> Callable[[Callable[[Check], Finding]], Callable[[Check], Finding]]:
    """Register the decorated function as the check kind ``name`` (a name taken twice is an error)."""
    def register(fn: Callable[[Check], Finding]) -> Callable[[Check], Finding]:
        if name in CHECKS:
            raise ValueError(f"check kind {name!r} is registered twice ({CHECKS[name].__module__}, {fn.__module__})")
        CHECKS[name] = fn
        return fn
    return register
