"""One plug-in mechanism: the registries of benchmark kinds, training sources, scorers, MT engines and
check kinds, wherever their definitions live.

A :class:`Registry` maps a name to a definition, held as a ``"module:attr"`` reference and loaded on first
use, so it sits below every layer (the config layer checks names against it without importing a
benchmark, a source, a scorer or an engine). Every registry is made by one helper, :func:`create_registry`,
and takes its entries from three places, the same way for every kind:

* xlt's own definitions: one line each in the tables below;
* installed packages: a Python entry point in the kind's group, ``xlt.<kind>`` (``xlt.benchmarks``,
  ``xlt.sources``, ``xlt.scorers``, ``xlt.mt_engines``, ``xlt.checks``), e.g.
  ``[project.entry-points."xlt.mt_engines"] my_mt = "my_pkg.mt:MyEngine"``;
* a folder of definition files, ``eval.include_path=[dir]``: every ``*.py`` file in it is run once, and
  each definition it makes is registered under its name: a class subclassing a registry's base class that
  sets the registry's name attribute (a benchmark's ``kind``, a source's or an MT engine's ``name``), or a
  function or class marked with :meth:`Registry.named` (``@check_kind("...")`` for a check kind,
  ``@SCORERS.named("...")`` for a scorer factory).

A name registered twice by different definitions is an error naming both. ``xlt plugins``
(:mod:`xlt.plugins`) lists every registry's names and where each comes from (:meth:`Registry.origin`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from functools import cache
from pathlib import Path
from typing import Any, Generic, TypeVar

from xlt.errors import ConfigError

T = TypeVar("T")
D = TypeVar("D")


@cache
def _entry_point_dists(group: str) -> dict[str, str]:
    """The installed distribution (``name==version``) that provides each entry point of ``group``."""
    from importlib.metadata import entry_points  # lazy: start-up time (python -m xlt.cluster after-stop)

    out = {}
    for ep in entry_points(group=group):
        dist = getattr(ep, "dist", None)
        out[ep.name] = f"{dist.metadata['Name']}=={dist.version}" if dist is not None else "unknown distribution"
    return out


@cache
def _entry_point_providers(group: str) -> dict[str, list[str]]:
    """Each entry point name of ``group`` provided by more than one definition: ``"dist (module:attr)"`` of each."""
    from importlib.metadata import entry_points  # lazy: start-up time

    seen: dict[str, dict[str, str]] = {}
    for ep in entry_points(group=group):
        dist = getattr(ep, "dist", None)
        who = f"{dist.metadata['Name']}=={dist.version}" if dist is not None else "unknown distribution"
        seen.setdefault(ep.name, {})[ep.value] = f"{who} ({ep.value})"
    return {name: sorted(by_ref.values()) for name, by_ref in seen.items() if len(by_ref) > 1}


@cache
def _entry_points(group: str) -> dict[str, str]:
    """The installed packages' entry points of ``group``: name -> ``"module:attr"`` (not loaded)."""
    from importlib.metadata import entry_points  # lazy: start-up time

    return {ep.name: ep.value for ep in sorted(entry_points(group=group), key=lambda ep: ep.name)}


def forget_entry_points() -> None:
    """Read the installed packages' entry points afresh at the next lookup (after installing one in-process)."""
    for cached in (_entry_points, _entry_point_dists, _entry_point_providers):
        cached.cache_clear()


def load_reference(ref: str) -> Any:
    """The object ``"module:attr"`` (or ``"module:Class.attr"``) names."""
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module.strip())
    for part in attr.strip().split(".") if attr.strip() else ():
        obj = getattr(obj, part)
    return obj


class Registry(MutableMapping[str, T], Generic[T]):
    """Name -> definition of one kind of plug-in. ``what`` names the entries in messages, ``key`` is the config
    key that selects one, ``group`` the entry-point group; ``attr`` is the name attribute a definition file's
    definition carries (set by the class, or by :meth:`named`); with ``instantiate``, a class found is
    constructed once (benchmarks)."""

    def __init__(self, what: str, key: str, group: str, builtin: dict[str, str], *, attr: str,
                 base: str | None = None, instantiate: bool = False):
        self.what, self.key, self.group, self.attr, self.instantiate = what, key, group, attr, instantiate
        self._base = base  # "module:Class" of the base class a definition subclasses (None: marked ones)
        self._builtin = dict(builtin)
        self._added: dict[str, T] = {}  # registered objects (definition files, tests)
        self._origin: dict[str, str] = {}  # name -> where an added definition came from
        self._loaded: dict[str, T] = {}

    @property
    def base(self) -> type | None:
        """The base class a definition file's definitions subclass (imported when first asked), or None."""
        return load_reference(self._base) if self._base else None

    def _refs(self) -> dict[str, str]:
        return {**_entry_points(self.group), **self._builtin}

    def names(self) -> tuple[str, ...]:
        """Every registered name: xlt's own (in table order), then installed packages', then added ones."""
        return tuple(dict.fromkeys([*self._builtin, *_entry_points(self.group), *self._added]))

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __contains__(self, name: object) -> bool:
        return name in self._added or name in self._refs()

    def conflict(self, name: str) -> str | None:
        """Why ``name`` is ambiguous, or None: xlt's own definition and an installed package's entry point, or
        two packages' entry points, register different definitions under it."""
        providers = list(_entry_point_providers(self.group).get(name, []))
        ep = _entry_points(self.group).get(name)
        if not providers and ep is not None:
            providers = [f"{_entry_point_dists(self.group).get(name, 'unknown distribution')} ({ep})"]
        if name in self._builtin and ep is not None and not (len(providers) == 1 and ep == self._builtin[name]):
            providers = [f"xlt ({self._builtin[name]})", *providers]
        if len(providers) < 2:
            return None
        return (f"{self.what} {name!r} is registered by {' and by '.join(providers)} (entry point group "
                f"{self.group}); give one another name, or uninstall one")

    def __getitem__(self, name: str) -> T:
        if name in self._added:
            return self._added[name]
        if name not in self._loaded:
            refs = self._refs()
            if name not in refs:
                raise KeyError(name)
            conflict = self.conflict(name)
            if conflict:
                raise ConfigError(conflict)
            try:
                obj = load_reference(refs[name])
            except Exception as err:
                raise ConfigError(f"{self.what} {name!r} ({refs[name]}, entry point group {self.group}) cannot be "
                                  f"loaded: {type(err).__name__}: {err}") from err
            self._loaded[name] = obj() if self.instantiate and isinstance(obj, type) else obj
        return self._loaded[name]

    def __setitem__(self, name: str, obj: T) -> None:
        self._added[name] = obj

    def __delitem__(self, name: str) -> None:
        del self._added[name]

    def builtin_reference(self, name: str) -> str:
        """The ``"module:attr"`` of xlt's own definition ``name`` (read without the installed packages' entry
        points: for a command that must start fast, python -m xlt.cluster after-stop)."""
        if name not in self._builtin:
            raise ConfigError(f"{name!r} is not one of xlt's own {self.what}s: {sorted(self._builtin)}")
        return self._builtin[name]

    def get_entry(self, name: str) -> T:
        """The definition registered as ``name``; an unknown name raises :class:`ConfigError` saying how to add one."""
        if name not in self:
            raise ConfigError(f"unknown {self.what} {name!r} ({self.key}); registered: {sorted(self.names())}. "
                              f"A new one is a definition file in a folder given by eval.include_path=[folder], or "
                              f"an installed package's entry point in the group '{self.group}'")
        return self[name]

    def named(self, name: str) -> Callable[[D], D]:
        """A decorator naming a function or class as this registry's definition ``name`` (it sets the
        registry's name attribute): found so in a definition file of ``eval.include_path``. xlt's own
        definitions are also listed in the registry's table, an installed package's by its entry point."""
        def mark(obj: D) -> D:
            setattr(obj, self.attr, name)
            return obj
        return mark

    def origin(self, name: str) -> str:
        """Where the definition ``name`` comes from, for people: ``xlt (module:attr)``, an installed
        distribution ``name==version (entry point module:attr)``, a definition file's path, or ``registered
        in code``. A name that is not registered raises :class:`KeyError`."""
        if name in self._added:
            return self._origin.get(name, "registered in code")
        conflict = self.conflict(name)
        if conflict:
            return f"CONFLICT: {conflict}"
        if name in self._builtin:
            return f"xlt ({self._builtin[name]})"
        if name in _entry_points(self.group):
            dist = _entry_point_dists(self.group).get(name, "unknown distribution")
            return f"{dist} (entry point {_entry_points(self.group)[name]})"
        raise KeyError(name)

    def identity(self, name: str) -> str | None:
        """What identifies the code of a definition from outside xlt's tree, for the job hash: a definition
        file's content (``file:<name>@sha256:<digest>``, of the file as it was run) or the installed
        distribution of an entry point (``dist:<name>==<version>``); None for xlt's own definitions and
        those registered in code (their ``version`` attribute counts)."""
        origin = self._origin.get(name)
        if origin is not None and origin in _file_digests:
            return f"file:{Path(origin).name}@sha256:{_file_digests[origin]}"
        if name in self._added or name in self._builtin:
            return None
        if name in _entry_points(self.group):
            return f"dist:{_entry_point_dists(self.group).get(name, 'unknown distribution')}"
        return None

    def add(self, name: str, obj: T, origin: str) -> None:
        """Register ``obj`` as ``name`` (from ``origin``, for messages); a name taken by another definition is an error."""
        taken = self._origin.get(name) or self._refs().get(name)
        if taken is not None and taken != origin:
            raise ConfigError(f"{origin}: {self.what} {name!r} is already registered by {taken}; give it another name")
        self._added[name] = obj
        self._origin[name] = origin

    def definition_name(self, obj: Any) -> str | None:
        """The name a definition file's object registers under here, or None: a class subclassing the
        registry's base that sets its own name attribute, or (registries without a base) an object marked
        with :meth:`named`. A helper base class without a name of its own is skipped."""
        base = self.base
        if base is not None and not (isinstance(obj, type) and issubclass(obj, base) and obj is not base):
            return None
        own = vars(obj) if hasattr(obj, "__dict__") else {}
        name = own.get(self.attr)
        return name if isinstance(name, str) and name else None


REGISTRIES: tuple[Registry[Any], ...] = ()


def create_registry(kind: str, what: str, key: str, builtin: dict[str, str], *, attr: str, base: str | None = None,
                    instantiate: bool = False) -> Registry[Any]:
    """The registry of one kind of plug-in (``kind``: plural, as in its entry-point group ``xlt.<kind>``),
    with xlt's own definitions ``builtin`` (name -> ``"module:attr"``), the name attribute ``attr`` and the
    base class ``base`` (``"module:Class"``) of a definition file's definitions; added to :data:`REGISTRIES`, which
    definition files and ``xlt plugins`` go through."""
    global REGISTRIES
    reg: Registry[Any] = Registry(what, key, f"xlt.{kind}", builtin, attr=attr, base=base, instantiate=instantiate)
    REGISTRIES = (*REGISTRIES, reg)
    return reg


BENCHMARKS = create_registry("benchmarks", "benchmark kind", "eval.benchmarks.<name>.kind", {
    "belebele": "xlt.data.benchmarks.belebele:Belebele",
    "global_mmlu": "xlt.data.benchmarks.global_mmlu:GLOBAL_MMLU",
    "global_mmlu_lite": "xlt.data.benchmarks.global_mmlu:GLOBAL_MMLU_LITE",
    "xcopa": "xlt.data.benchmarks.xcopa:XCOPA",
}, attr="kind", base="xlt.data.benchmarks.base:Benchmark", instantiate=True)

# Registration order is the order of the sources in the built training set.
SOURCES = create_registry("sources", "training source", "data.sources.<name>", {
    "race": "xlt.data.sources.race:Race",
    "sciq": "xlt.data.sources.sciq:SciQ",
    "multirc": "xlt.data.sources.multirc:MultiRC",
    "mctest": "xlt.data.sources.mctest:MCTest",
    "mcscript": "xlt.data.sources.mcscript:MCScript",
    "reclor": "xlt.data.sources.reclor:ReClor",
}, attr="name", base="xlt.data.sources.base:Source")

# A scorer is a factory ``(cfg, run) -> scorer`` (see xlt/scoring/scorers.py); in a definition file, one
# marked with ``@SCORERS.named("...")``.
SCORERS = create_registry("scorers", "scorer", "eval.scorer", {
    "mc": "xlt.scoring.mc:MCScorer.from_config",  # the encoder's multiple-choice head
    "gold": "xlt.scoring.scorers:GoldScorer",
    "fixed": "xlt.scoring.scorers:FixedScorer",
    "llm": "xlt.scoring.llm.scorer:LLMScorer",  # causal LLMs, lm-evaluation-harness prompts
}, attr="xlt_scorer")

# An MT engine is a subclass of xlt.translation.engines.base.Engine: it builds a translator from the
# ``translate`` section and says what enters the hashes of its translations. ``translate.kind`` names one
# (echo, a plug-in's); kind=hf runs an NLLB / M2M100 checkpoint on the engine ``translate.engine`` names.
MT_ENGINES = create_registry("mt_engines", "MT engine", "translate.kind / translate.engine", {
    "echo": "xlt.translation.engines.base:EchoEngine",  # deterministic, no model (tests, demos)
    "transformers": "xlt.translation.engines.hf:TransformersEngine",  # NLLB / M2M100 through generate()
    "ctranslate2": "xlt.translation.engines.ct2:CT2Engine",  # NLLB / M2M100 converted to CTranslate2
}, attr="name", base="xlt.translation.engines.base:Engine", instantiate=True)

# A check kind is a function ``Check -> Finding`` (xlt/reporting/checks/base.py) that a benchmark's claim
# names in ``check``; each is marked ``@check_kind("...")`` where it is defined.
CHECKS = create_registry("checks", "check kind", "a claim's check", {
    "family_best_on_levels": "xlt.reporting.checks.families:check_family_best_on_levels",
    "family_most_above": "xlt.reporting.checks.families:check_family_most_above",
    "family_most_at_or_above": "xlt.reporting.checks.families:check_family_most_at_or_above",
    "translate_train_all_beats_zero_shot": "xlt.reporting.checks.transfer:check_translate_train_all_beats_zero_shot",
    "translate_test_beats_in_language_llm": "xlt.reporting.checks.transfer:check_translate_test_beats_in_language_llm",
    "human_above_machine_same_language": "xlt.reporting.checks.transfer:check_human_above_machine_same_language",
    "rank_changes_per_language": "xlt.reporting.checks.rankings:check_rank_changes_per_language",
    "higher_where_column_is": "xlt.reporting.checks.groups:check_higher_where_column_is",
    "accuracy_follows_tokenizer": "xlt.reporting.checks.vocabulary:check_accuracy_follows_tokenizer",
}, attr="check_kind")

# A scheduler is a subclass of xlt.cluster.backend.Scheduler (docs/schedulers.md); XLT_SCHEDULER names one,
# else xlt's own are told from the environment (xlt.cluster.backend.active_scheduler).
SCHEDULERS = create_registry("schedulers", "scheduler", "XLT_SCHEDULER", {
    "slurm": "xlt.cluster.slurm:Slurm",
    "gridengine": "xlt.cluster.gridengine:GridEngine",
    "local": "xlt.cluster.backend:Local",  # no scheduler
}, attr="name", base="xlt.cluster.backend:Scheduler")

_included: dict[Path, list[tuple[Registry[Any], str]]] = {}
_file_digests: dict[str, str] = {}  # definition file -> sha256 of the content that was run


def _error_line(err: BaseException, file: Path) -> str:
    frames = [f for f in traceback.extract_tb(err.__traceback__) if Path(f.filename) == file]
    return f" line {frames[-1].lineno}" if frames else ""


def _run_file(file: Path) -> Any:
    _file_digests[str(file)] = hashlib.sha256(file.read_bytes()).hexdigest()[:16]
    name = f"xlt_include_{hashlib.sha1(str(file).encode()).hexdigest()[:12]}_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        del sys.modules[name]
        raise ConfigError(f"eval.include_path: {file}{_error_line(err, file)}: {type(err).__name__}: {err}") from None
    return module


def _definitions(module: Any) -> list[tuple[Registry[Any], str, Any]]:
    """The (registry, name, definition) of every class or function ``module`` defines that a registry takes
    (:meth:`Registry.definition_name`)."""
    out = []
    for obj in vars(module).values():
        if not ((inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__ == module.__name__
                and not inspect.isabstract(obj)):
            continue
        for reg in REGISTRIES:
            name = reg.definition_name(obj)
            if name is not None:
                out.append((reg, name, obj() if reg.instantiate and isinstance(obj, type) else obj))
    return out


def include(paths: Iterable[str]) -> list[str]:
    """Register the definitions of every ``*.py`` file in each folder of ``paths`` (each file run once per
    process); returns the names registered. A missing folder or a failing file raises :class:`ConfigError`."""
    names: list[str] = []
    for entry in paths:
        folder = Path(str(entry)).expanduser().resolve()
        if not folder.is_dir():
            raise ConfigError(f"eval.include_path: {entry} is not a folder (give folders of definition files)")
        for file in sorted(p for p in folder.glob("*.py") if not p.name.startswith(("_", "."))):
            if file not in _included:
                found = _definitions(_run_file(file))
                if not found:
                    raise ConfigError(f"eval.include_path: {file} defines no benchmark or source, nor a scorer, an MT "
                                      "engine or a check kind: e.g. a class subclassing "
                                      "xlt.data.benchmarks.base.Benchmark that sets its own kind = \"...\" "
                                      "(docs/adding-a-benchmark.md)")
                for reg, name, obj in found:
                    reg.add(name, obj, str(file))
                _included[file] = [(reg, name) for reg, name, _ in found]
            names += [name for _, name in _included[file]]
    return names
