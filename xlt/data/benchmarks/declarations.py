"""What a benchmark definition declares as data: its LLM prompt, its subsets and its report (with its paper's claims).

A definition (:class:`~xlt.data.benchmarks.base.Benchmark`) sets ``prompt = Prompt(...)`` and
``report = Report(...)``; the layers act on them: :mod:`xlt.scoring.llm.task` formats the prompt,
:meth:`Benchmark.item_subsets` computes the subsets' masks, :mod:`xlt.reporting.tables` builds the
report's tables and :mod:`xlt.reporting.checks` checks the claims. The defaults suit a plain
multiple-choice benchmark (lm-evaluation-harness's lettered prompt, no subsets, grouped by script,
family and resource level, languages counted at 50% and 70%, no claims).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

# The answer continuations a prompt may declare (``Prompt.choices``).
CHOICES = ("letters", "lowercased_options")
SAMPLERS = ("first_n", "random")


@dataclass(frozen=True)
class Prompt:
    """A causal LLM's prompt of one item, as an lm-evaluation-harness task declares it.

    ``text`` (the harness's ``doc_to_text``): a :meth:`str.format` template over ``{passage}``,
    ``{question}`` (each stripped of surrounding white space unless named in ``raw``) and ``{options}``
    (one ``option`` line per option, over ``{letter}`` and ``{option}``); a template line that is only
    ``{passage}`` is left out when the passage is empty. ``choices`` (``doc_to_choice``; each scored after
    the target delimiter): ``"letters"`` (A, B, ... one per option) or ``"lowercased_options"`` (the option
    texts, first letter lower-cased); the gold one is the label's. ``instruction``: the zero-shot
    instruction in generation mode (empty: the Belebele paper's, with or without a passage).

    Few-shot examples: ``sampler`` is the default of ``samplers`` — ``"first_n"`` (the first k rows of the
    pool, as the harness's ``first_n`` sampler) or ``"random"`` (``Random(seed).sample(pool, k)`` drawn question
    after question, one generator per group, as its default sampler); ``fewshot_groups``: per sampler, the
    column the harness splits a language into tasks by (one pool and one generator per value; absent: the
    whole language is one task). ``harness_task_unit``: how the harness splits a language into tasks, for the
    note on a capped run (None: one task per language, so ``max_questions`` is the harness's ``--limit``).
    """

    text: str = "{passage}\n{question}\n{options}\nAnswer:"
    option: str = "{letter}. {option}"
    raw: tuple[str, ...] = ()
    choices: str = "letters"
    instruction: str = ""
    samplers: tuple[str, ...] = SAMPLERS
    sampler: str = "first_n"
    fewshot_groups: Mapping[str, str] = field(default_factory=dict)
    harness_task_unit: str | None = None

    def __post_init__(self) -> None:
        if self.choices not in CHOICES:
            raise ValueError(f"Prompt.choices={self.choices!r}: use one of {list(CHOICES)}")
        unknown = [s for s in (*self.samplers, self.sampler, *self.fewshot_groups) if s not in SAMPLERS]
        if unknown or self.sampler not in self.samplers:
            raise ValueError(f"Prompt: sampler {self.sampler!r} of {list(self.samplers)} (groups for "
                             f"{list(self.fewshot_groups)}): each must be one of {list(SAMPLERS)}")
        object.__setattr__(self, "fewshot_groups", MappingProxyType(dict(self.fewshot_groups)))


@dataclass(frozen=True)
class Subset:
    """The items of one language whose metadata ``column`` equals ``value`` (a boolean column: True),
    reported with their own accuracy beside ``full``. ``per_value``: one finer subset ``<name>/<value>``
    per distinct value of ``column`` instead (e.g. Global-MMLU's ``category/<name>``), summarised as
    ``by_<name>``."""

    name: str
    column: str
    value: Any = True
    per_value: bool = False


@dataclass(frozen=True)
class Claim:
    """A finding of a benchmark's paper, declared as data in its report (:attr:`Report.claims`).

    ``check`` names one of the check kinds registered in :mod:`xlt.reporting.checks` (which runs it on
    the systems of a comparison), ``id`` the finding within the benchmark (its id in reports is
    ``<finding_prefix>_<id>``), ``text`` the claim in words, ``params`` what the check compares (see
    the check kind). What the paper says: ``quote`` (its sentence, with ``section`` where it stands);
    ``verbatim`` says whether it is the paper's own words, checked against its text, or a paraphrase (a
    statement whose wording could not be checked is never passed off as a quote). ``needs``: the
    systems and languages the check needs.
    """

    check: str
    id: str
    text: str
    params: dict[str, Any] = field(default_factory=dict)
    quote: str = ""
    section: str = ""
    verbatim: bool = False
    needs: str = ""

    def cited(self) -> str:
        """The paper's sentence as reports show it: quoted (verbatim) or marked as a paraphrase."""
        if not self.quote:
            return ""
        where = f" ({self.section})" if self.section else ""
        return f"\u201c{self.quote}\u201d{where}" if self.verbatim else f"paraphrase{where}: {self.quote}"


@dataclass(frozen=True)
class Report:
    """How a benchmark's results are grouped, summarised, shown and checked against its paper.

    ``title``: the name reports, plots and findings use (empty: the kind). ``subsets``: the subsets of a
    language's items reported beside ``full``. ``language_groupings``: per-language columns (from the
    language table, :meth:`Benchmark.language_info`) results are grouped by: summaries, grouped plots,
    the results pages' filters and compare's tables. ``thresholds``: accuracies (%) for which the summary
    counts the languages at or above (``n_ge_<t>``). ``labels``: display names of columns and subsets (a
    missing key shows as itself). ``rank_subsets``: subsets (``"full"`` and names of ``subsets``) systems are
    ranked on in ``report --compare``, ``rank_pairs`` the pairs of them whose rank changes are counted (none:
    no rankings section). ``contrast``: two subsets shown side by side per language (a plot
    ``<name>_<a>_vs_<b>.png``; None: no such plot). ``claims``: the claims of the benchmark's paper checked on
    every comparison, each with the id ``<finding_prefix>_<claim id>`` (``finding_prefix`` empty: the kind).
    """

    title: str = ""
    subsets: tuple[Subset, ...] = ()
    language_groupings: tuple[str, ...] = ("script", "family", "resource")
    thresholds: tuple[float, ...] = (50.0, 70.0)
    labels: Mapping[str, str] = field(default_factory=lambda: {"resource": "resource level"})
    rank_subsets: tuple[str, ...] = ()
    rank_pairs: tuple[tuple[str, str], ...] = ()
    contrast: tuple[str, str] | None = None
    claims: tuple[Claim, ...] = ()
    finding_prefix: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", MappingProxyType(dict(self.labels)))

    @property
    def subset_names(self) -> tuple[str, ...]:
        """The subsets reported beside ``full`` (the finer per-value ones are summarised by name)."""
        return tuple(s.name for s in self.subsets if not s.per_value)

    @property
    def subset_columns(self) -> tuple[str, ...]:
        """The metadata columns the subsets are computed from."""
        return tuple(dict.fromkeys(s.column for s in self.subsets))

    def label(self, key: str) -> str:
        return self.labels.get(key, key)
