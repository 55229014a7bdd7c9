"""The registries of names: benchmark kinds, training sources and scorers, wherever they are defined.

A registry maps a name to a ``"module:attr"`` reference, loaded on first use, so it sits below every
layer (the config layer checks names against it without importing a benchmark, a source or a scorer).
Its entries come from three places, all through the same :class:`Registry`:

* xlt's own definitions: one line each in the tables below;
* installed packages: a Python entry point in the group ``xlt.benchmarks``, ``xlt.sources`` or
  ``xlt.scorers`` (``[project.entry-points."xlt.benchmarks"] xcsqa = "my_pkg.xcsqa:XCSQA"``);
* a folder of definition files, ``eval.include_path=[dir]``: every ``*.py`` file in it is run once, and
  each class it defines that subclasses a registry's base class and sets the registry's name attribute
  (a benchmark's ``kind``, a source's ``name``) is registered under that name.

A name registered twice by different definitions is an error naming both.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
import traceback
from collections.abc import Iterable, Iterator, MutableMapping
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from xlt.errors import ConfigError


@cache
def _entry_point_dists(group: str) -> dict[str, str]:
    """The installed distribution (``name==version``) that provides each entry point of ``group``."""
    out = {}
    for ep in entry_points(group=group):
        dist = getattr(ep, "dist", None)
        out[ep.name] = f"{dist.metadata['Name']}=={dist.version}" if dist is not None else "unknown distribution"
    return out


@cache
def _entry_points(group: str) -> dict[str, str]:
    """The installed packages' entry points of ``group``: name -> ``"module:attr"`` (not loaded)."""
    return {ep.name: ep.value for ep in sorted(entry_points(group=group), key=lambda ep: ep.name)}


def load_reference(ref: str) -> Any:
    """The object ``"module:attr"`` (or ``"module:Class.attr"``) names."""
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module.strip())
    for part in attr.strip().split(".") if attr.strip() else ():
        obj = getattr(obj, part)
    return obj


class Registry(MutableMapping):
    """Name -> definition. ``what`` names the entries in messages, ``key`` is the config key that selects one,
    ``group`` the entry-point group; with ``instantiate``, a class found is constructed once (benchmarks)."""

    def __init__(self, what: str, key: str, group: str, builtin: dict[str, str], *, attr: str = "",
                 instantiate: bool = False):
        self.what, self.key, self.group, self.attr, self.instantiate = what, key, group, attr, instantiate
        self._builtin = dict(builtin)
        self._added: dict[str, Any] = {}  # registered objects (definition files, tests)
        self._origin: dict[str, str] = {}  # name -> where an added definition came from
        self._loaded: dict[str, Any] = {}
        self.base: type | None = None  # set by the layer that defines the base class (for definition files)

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

    def __getitem__(self, name: str) -> Any:
        if name in self._added:
            return self._added[name]
        if name not in self._loaded:
            refs = self._refs()
            if name not in refs:
                raise KeyError(name)
            try:
                obj = load_reference(refs[name])
            except Exception as err:
                raise ConfigError(f"{self.what} {name!r} ({refs[name]}, entry point group {self.group}) cannot be "
                                  f"loaded: {type(err).__name__}: {err}") from err
            self._loaded[name] = obj() if self.instantiate and isinstance(obj, type) else obj
        return self._loaded[name]

    def __setitem__(self, name: str, obj: Any) -> None:
        self._added[name] = obj

    def __delitem__(self, name: str) -> None:
        del self._added[name]

    def get_entry(self, name: str) -> Any:
        """The definition registered as ``name``; an unknown name raises :class:`ConfigError` saying how to add one."""
        if name not in self:
            folder = "a definition file in a folder given by eval.include_path=[folder], or " if self.attr else ""
            raise ConfigError(f"unknown {self.what} {name!r} ({self.key}); registered: {sorted(self.names())}. "
                              f"A new one is {folder}an installed package's entry point in the group '{self.group}'")
        return self[name]

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

    def add(self, name: str, obj: Any, origin: str) -> None:
        """Register ``obj`` as ``name`` (from ``origin``, for messages); a name taken by another definition is an error."""
        taken = self._origin.get(name) or self._refs().get(name)
        if taken is not None and taken != origin:
            raise ConfigError(f"{origin}: {self.what} {name!r} is already registered by {taken}; give it another name")
        self._added[name] = obj
        self._origin[name] = origin


BENCHMARKS = Registry("benchmark kind", "eval.benchmarks.<name>.kind", "xlt.benchmarks", {
    "belebele": "xlt.data.benchmarks.belebele:Belebele",
    "global_mmlu": "xlt.data.benchmarks.global_mmlu:GLOBAL_MMLU",
    "global_mmlu_lite": "xlt.data.benchmarks.global_mmlu:GLOBAL_MMLU_LITE",
    "xcopa": "xlt.data.benchmarks.xcopa:XCOPA",
}, attr="kind", instantiate=True)

# Registration order is the order of the sources in the built training set.
SOURCES = Registry("training source", "data.sources.<name>", "xlt.sources", {
    "race": "xlt.data.sources.race:Race",
    "sciq": "xlt.data.sources.sciq:SciQ",
    "multirc": "xlt.data.sources.multirc:MultiRC",
    "mctest": "xlt.data.sources.mctest:MCTest",
    "mcscript": "xlt.data.sources.mcscript:MCScript",
    "reclor": "xlt.data.sources.reclor:ReClor",
}, attr="name")

# A scorer is a factory ``(cfg, run) -> scorer`` (see xlt/scoring/scorers.py).
SCORERS = Registry("scorer", "eval.scorer", "xlt.scorers", {
    "mc": "xlt.scoring.mc:MCScorer.from_config",  # the encoder's multiple-choice head
    "gold": "xlt.scoring.scorers:GoldScorer",
    "fixed": "xlt.scoring.scorers:FixedScorer",
    "llm": "xlt.scoring.llm.scorer:LLMScorer",  # causal LLMs, lm-evaluation-harness prompts
})

REGISTRIES = (BENCHMARKS, SOURCES, SCORERS)
_included: dict[Path, list[tuple[Registry, str]]] = {}
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


def _definitions(module: Any, file: Path) -> list[tuple[Registry, str, Any]]:
    """The (registry, name, definition) of every class ``module`` defines that a registry takes."""
    out = []
    for obj in vars(module).values():
        if not (isinstance(obj, type) and obj.__module__ == module.__name__ and not inspect.isabstract(obj)):
            continue
        for reg in REGISTRIES:
            if reg.base is not None and issubclass(obj, reg.base) and obj is not reg.base:
                name = obj.__dict__.get(reg.attr)  # its own: a helper base class without one is skipped
                if isinstance(name, str) and name:
                    out.append((reg, name, obj() if reg.instantiate else obj))
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
                found = _definitions(_run_file(file), file)
                if not found:
                    raise ConfigError(f"eval.include_path: {file} defines no benchmark or source: a class subclassing "
                                      "xlt.data.benchmarks.base.Benchmark that sets its own kind = \"...\"")
                for reg, name, obj in found:
                    reg.add(name, obj, str(file))
                _included[file] = [(reg, name) for reg, name, _ in found]
            names += [name for _, name in _included[file]]
    return names
