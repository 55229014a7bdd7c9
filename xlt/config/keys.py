"""The one table of result-changing keys, derived from the schemas' field metadata (:mod:`.fields`).

It answers four questions, for run naming, stage input hashes, the prefetch command and run comparison:

* :func:`key_info` — which stage a key affects (``None``: no result), whether it names the run, whether it
  only splits work between jobs;
* :func:`stage_values` — the values a stage's output depends on directly (its own keys; upstream stages
  enter through their outputs' provenance, see :mod:`xlt.contract`);
* :func:`names_run` — whether a command-line override belongs in the run directory's name: keys that change
  the data or the trained model (build_data, translate, train), and evaluation keys that score another model;
* :func:`result_values` — a run's config without the keys that change no result (for grouping seeds).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from xlt.config.fields import INHERIT, dataclass_of, is_dict_field, type_hints
from xlt.config.schema import XltConfig

# Stages whose outputs make up "what was trained": an override of one of their keys is another run.
TRAINING_STAGES = ("build_data", "translate", "train")


@dataclass(frozen=True)
class KeyInfo:
    key: str
    affects: str | None  # the first stage whose output the key changes; None: no result
    names_run: bool  # an override of it goes into the run directory's name
    split: bool  # only says how work is divided between jobs
    is_section: bool = False  # a dataclass node (a config group), not a leaf
    translator: bool = False  # a setting of the translator: translate-test results depend on it too
    when: tuple[str, str] | None = None  # (key, value): it changes a result only while key == value
    per_job: bool = True  # False: selects which evaluate jobs exist, changes none of them
    why: str | None = None  # why it is absent from a hash it would otherwise enter (neutral keys: always set)
    # A key added after results existed: it enters the stage and job hashes only when it is not ``default``.
    omit_default: bool = False
    default: Any = None

    def hashed(self, value: Any) -> bool:
        """Whether ``value`` of this key enters a hash (not: an ``omit_default`` key at its default)."""
        return not (self.omit_default and value == self.default)


def _root() -> type:
    return XltConfig


def _field_info(f: dataclasses.Field, key: str, parent: KeyInfo | None, is_section: bool) -> KeyInfo:
    meta = f.metadata
    affects = meta.get("affects", INHERIT)
    if affects == INHERIT:
        affects = parent.affects if parent else None
    names = meta.get("names_run")
    if names is None:
        names = parent.names_run if parent and parent.affects == affects else affects in TRAINING_STAGES
    inherited = parent if parent is not None else KeyInfo("", None, False, False)
    return KeyInfo(key, affects, bool(names), bool(meta.get("split", False)), is_section,
                   translator=bool(meta.get("translator", inherited.translator)),
                   when=tuple(meta["when"]) if "when" in meta else inherited.when,
                   per_job=bool(meta.get("per_job", True)) and inherited.per_job,
                   why=meta.get("why", inherited.why), omit_default=bool(meta.get("omit_default", False)),
                   default=None if f.default is dataclasses.MISSING else f.default)


def key_info(key: str) -> KeyInfo | None:
    """What ``key`` (dotted, e.g. ``data.sources.race.path``; dict entries are any name) affects.

    None for keys outside the schema (``hydra.*``, ``recipe``).
    """
    cls: type | None = _root()
    parent: KeyInfo | None = None
    parts = key.lstrip("+~").replace("/", ".").split(".")
    i = 0
    while i < len(parts):
        if cls is None:
            return parent  # below a plain dict/list leaf: the leaf's info
        hints = type_hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        if parts[i] not in fields:
            return None
        f = fields[parts[i]]
        tp = hints[f.name]
        sub = dataclass_of(tp)
        name = ".".join(parts[: i + 1])
        parent = _field_info(f, name, parent, sub is not None)
        if sub is not None and is_dict_field(tp):
            i += 1  # skip the entry name: any name has the entry schema
        cls = sub
        i += 1
    return parent


def names_run(key: str) -> bool:
    """Whether a command-line override of ``key`` names the run directory (see the module docstring)."""
    info = key_info(key)
    return bool(info and info.names_run)


def is_split_key(key: str) -> bool:
    info = key_info(key)
    return bool(info and info.split)


def _walk(cls: type, values: Any, prefix: str, parent: KeyInfo | None, out: dict[str, tuple[KeyInfo, Any]]) -> None:
    hints = type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name not in values:
            continue
        key = f"{prefix}{f.name}"
        try:
            value = values[f.name]
        except Exception:  # an interpolation that cannot resolve (its target is unset)
            value = "<unresolved>"
        sub = dataclass_of(hints[f.name])
        info = _field_info(f, key, parent, sub is not None)
        if isinstance(value, str) and value in f.metadata.get("hash_as", {}):
            value = f.metadata["hash_as"][value]  # a renamed value: its old spelling, as its hashes were made
        if sub is None or value is None:
            if OmegaConf.is_config(value):
                value = OmegaConf.to_container(value, resolve=True)
            out[key] = (info, value)
        elif is_dict_field(hints[f.name]):
            if not value:
                out[key] = (info, {})
            for name in sorted(value):
                _walk(sub, value[name], f"{key}.{name}.", info, out)
        else:
            _walk(sub, value, f"{key}.", info, out)


# id(cfg) -> cfg resolved to a plain container, while a reader of many runs holds it (:func:`resolved_as`).
_RESOLVED: dict[int, dict[str, Any]] = {}


@contextlib.contextmanager
def resolved_as(cfg: DictConfig, container: dict[str, Any]) -> Iterator[None]:
    """Within the block, :func:`leaves` of ``cfg`` walks ``container``: ``cfg`` resolved to a plain container
    (``OmegaConf.to_container(cfg, resolve=True)``), made once by the caller (:mod:`xlt.cluster.sweep_configs`:
    a run's config is the shared one with its leaf values set) instead of at every stage's hash."""
    _RESOLVED[id(cfg)] = container
    try:
        yield
    finally:
        _RESOLVED.pop(id(cfg), None)
        _LEAVES.pop(id(cfg), None)


_LEAVES: dict[int, dict[str, tuple[KeyInfo, Any]]] = {}  # id(cfg) -> its leaves, within resolved_as()


def leaves(cfg: DictConfig | dict[str, Any]) -> dict[str, tuple[KeyInfo, Any]]:
    """Every leaf of ``cfg`` (dotted key -> (its info, its value)), in schema order."""
    out: dict[str, tuple[KeyInfo, Any]] = {}
    if isinstance(cfg, DictConfig) and id(cfg) in _RESOLVED:  # the same for every stage of the run: walked once
        if id(cfg) not in _LEAVES:
            _walk(_root(), _RESOLVED[id(cfg)], "", None, out)
            _LEAVES[id(cfg)] = out
        return dict(_LEAVES[id(cfg)])
    if isinstance(cfg, DictConfig):  # plain containers walk ~10x faster (every stage hash walks them)
        try:
            cfg = OmegaConf.to_container(cfg, resolve=True)
        except Exception:  # an interpolation that cannot resolve: walk the config (it marks that leaf)
            pass
    _walk(_root(), cfg, "", None, out)
    return out


def stage_values(cfg: DictConfig | dict[str, Any], stage: str) -> dict[str, Any]:
    """The leaves whose value changes ``stage``'s output directly (split keys excluded; an ``omit_default`` key
    only when it is not at its default)."""
    return {k: v for k, (info, v) in leaves(cfg).items() if info.affects == stage and not info.split and info.hashed(v)}


def _applies(cfg: Any, info: KeyInfo) -> bool:
    """Whether ``info``'s ``when`` condition holds in ``cfg`` (no condition: always)."""
    if info.when is None:
        return True
    key, value = info.when
    return OmegaConf.select(cfg, key) == value if isinstance(cfg, DictConfig) else _get(cfg, key) == value


def _get(values: Any, key: str) -> Any:
    for part in key.split("."):
        values = values.get(part) if isinstance(values, dict) else None
    return values


def translator_values(cfg: DictConfig | dict[str, Any]) -> dict[str, Any]:
    """The settings of the translator (``translator`` keys): what translate-test results depend on."""
    return {k: v for k, (info, v) in leaves(cfg).items() if info.translator and not info.split}


def job_values(cfg: DictConfig | dict[str, Any], benchmark: str) -> dict[str, Any]:
    """The evaluate keys one result of ``benchmark`` depends on: every evaluate key that applies (its
    ``when`` holds) and is not a split or selection key, with ``eval.benchmarks`` cut to this entry (an
    ``omit_default`` key only when it is not at its default)."""
    others = "eval.benchmarks."
    mine = f"eval.benchmarks.{benchmark}."
    return {k: v for k, (info, v) in leaves(cfg).items()
            if info.affects == "evaluate" and not info.split and info.per_job and _applies(cfg, info) and info.hashed(v)
            and (not k.startswith(others) or k.startswith(mine))}


def eval_job_values(eval_cfg: DictConfig | dict[str, Any], benchmark: str) -> dict[str, Any]:
    """:func:`job_values` from the ``eval`` section alone (the same keys and values): every evaluate key, and
    every key a ``when`` condition of one names, lies under ``eval`` (tests/config/test_config_sections.py holds it)."""
    values = OmegaConf.to_container(eval_cfg, resolve=True) if isinstance(eval_cfg, DictConfig) else eval_cfg
    return job_values({"eval": values}, benchmark)


def result_values(cfg: DictConfig | dict[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """The leaves that change some result (minus the keys in ``drop``, e.g. ``seed``)."""
    return {k: v for k, (info, v) in leaves(cfg).items()
            if info.affects is not None and not info.split and k not in drop and info.hashed(v)}


_MAX_NAME = 120


def run_name(overrides: list[str]) -> str:
    """Relative run directory for a list of command-line overrides, e.g. ``demo/seed=2``.

    The recipe (``+recipe=NAME``) names the first level; the overrides that change what is trained
    (data, translation, model, training, seed) or which model is scored (``eval.model``, ``eval.scorer``,
    ``eval.llm``), sorted, name the second (``default`` when there are none); see
    the module docstring. Long names are shortened with a hash.
    """
    recipe = "norecipe"
    rest = []
    for ov in overrides:
        key, _, value = ov.partition("=")
        if key.lstrip("+") == "recipe":
            recipe = value
        elif names_run(key):
            rest.append(f"{key.lstrip('+')}={value}")
    tail = ",".join(sorted(rest)) or "default"
    tail = re.sub(r"[^A-Za-z0-9_.,=+\-]", "_", tail)
    if len(tail) > _MAX_NAME:
        digest = hashlib.sha1(tail.encode()).hexdigest()[:10]
        tail = f"{tail[: _MAX_NAME - 11]}-{digest}"
    return f"{recipe}/{tail}"


def schema_keys(cls: type | None = None, prefix: str = "", parent: KeyInfo | None = None) -> dict[str, KeyInfo]:
    """Every leaf key of the schema with its info; the entries of a dict section are named ``*``."""
    out: dict[str, KeyInfo] = {}
    cls = cls or _root()
    hints = type_hints(cls)
    for f in dataclasses.fields(cls):
        sub = dataclass_of(hints[f.name])
        info = _field_info(f, f"{prefix}{f.name}", parent, sub is not None)
        if sub is None:
            out[info.key] = info
        else:
            out.update(schema_keys(sub, f"{info.key}.*." if is_dict_field(hints[f.name]) else f"{info.key}.", info))
    return out


def declared_exceptions() -> dict[str, dict[str, str]]:
    """The keys absent from a hash they could be expected in, with the schema's reason (``why``), by kind:
    ``neutral`` (change no result), ``not translate-test`` (translate keys translate-test does not read),
    ``selection`` (evaluate keys that choose which results exist). docs/weights-and-hashes.md lists them."""
    out: dict[str, dict[str, str]] = {"neutral": {}, "not translate-test": {}, "selection": {}}
    for key, info in schema_keys().items():
        if info.affects is None:
            out["neutral"][key] = str(info.why)
        elif key.startswith("translate.") and not info.translator:
            out["not translate-test"][key] = str(info.why)
        elif not info.per_job:
            out["selection"][key] = str(info.why)
    return out
