"""What a check kind gets and returns (:class:`Check`, :class:`Finding`), and the registry of check kinds.

A check kind is a function ``Check -> Finding`` marked with its name by :func:`check_kind` where it is
defined (:mod:`xlt.reporting.checks`), and registered in :data:`xlt.registry.CHECKS` like every plug-in; a
claim (:class:`~xlt.data.benchmarks.declarations.Claim`) names it in ``check``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from xlt import registry
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


# The check kinds by name (xlt.registry.CHECKS): xlt's own listed there, an installed package's by an entry
# point in the group ``xlt.checks``, a definition file's (eval.include_path) marked with @check_kind.
CHECKS = registry.CHECKS


def check_kind(name: str) -> Callable[[Callable[[Check], Finding]], Callable[[Check], Finding]]:
    """Mark the decorated function as the check kind ``name`` (:meth:`xlt.registry.Registry.named`): so a
    definition file of ``eval.include_path`` registers it; xlt's own check kinds are also listed in
    :data:`xlt.registry.CHECKS` (tests/test_plugins.py holds the two in step). A name taken twice is an error
    naming both definitions."""
    return CHECKS.named(name)
