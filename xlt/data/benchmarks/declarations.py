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


TARGETS = ("index", "letter")


def slug(value: Any) -> str:
    """A column value as it stands in a harness task name (``Social Sciences`` -> ``social_sciences``)."""
    return str(value).strip().lower().replace(" ", "_").replace("-", "_")


@dataclass(frozen=True)
class HarnessTasks:
    """How lm-evaluation-harness 0.4 names and describes this benchmark's tasks, as its built-in task files do
    (:mod:`xlt.reporting.harness` writes and reads its output folder with it).

    ``task``: a :meth:`str.format` template of a task name over ``{language}`` (the benchmark's own code) and
    item columns (their values through :func:`slug`), e.g. ``belebele_{language}``,
    ``global_mmlu_full_{language}_{subject}``; ``language``: the regular expression of a language code in a
    task name. ``options``: each document's number of options (the chance level of a task read without its sample
    logs). ``target``: what a sample log's ``target`` holds (``index``: the gold option's index;
    ``letter``: its letter, as Global-MMLU's ``doc_to_target: answer``). ``metrics``: the task's
    ``metric_list`` (``acc``, ``acc_norm``); ``version``: its ``metadata.version``; ``dataset_path``: the Hub
    dataset its YAML names. ``group``: the harness group over the tasks (a template over ``{language}``;
    None: none), ``group_version`` its version, ``group_of``: ``"languages"`` (one group over every
    language's task, e.g. ``belebele``, written when every language of ``group_languages`` is there) or
    ``"language"`` (one per language over its tasks, e.g. ``global_mmlu_de``).
    """

    task: str
    language: str = r"[a-z]{2,3}"
    options: int = 4
    target: str = "index"
    metrics: tuple[str, ...] = ("acc",)
    version: float = 0.0
    dataset_path: str = ""
    group: str | None = None
    group_version: float = 0.0
    group_of: str = "languages"
    group_languages: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise ValueError(f"HarnessTasks.target={self.target!r}: use one of {list(TARGETS)}")
        if self.group_of not in ("languages", "language"):
            raise ValueError(f"HarnessTasks.group_of={self.group_of!r}: use 'languages' or 'language'")

    @property
    def columns(self) -> tuple[str, ...]:
        """The item columns the task name is split by (empty: one task per language)."""
        import string

        return tuple(f for _, f, _, _ in string.Formatter().parse(self.task) if f and f != "language")

    def name(self, language: str, row: Mapping[str, Any] | None = None) -> str:
        """The task name of an item ``row`` of ``language``."""
        return self.task.format(language=language, **{c: slug((row or {})[c]) for c in self.columns})

    def pattern(self) -> Any:
        """The regular expression of this benchmark's task names (groups: ``language`` and each column)."""
        import re

        parts = re.split(r"(\{[a-z_]+\})", self.task)
        body = "".join(f"(?P<language>{self.language})" if p == "{language}" else
                       f"(?P<{p[1:-1]}>[a-z0-9_]+?)" if p.startswith("{") else re.escape(p) for p in parts)
        return re.compile(f"^{body}$")


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
