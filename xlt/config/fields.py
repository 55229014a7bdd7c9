"""Field declarations of the config schemas: allowed values, and which stage each key affects.

Every schema field is a plain dataclass field; :func:`opt` adds metadata that two mechanisms read:

* **validation** (:func:`check_values`): ``choices`` (an enum of strings), ``ge``/``gt``/``le`` ranges
  (``None`` values are always allowed for optional fields), checked on the whole config before any stage;
* **the key table** (:mod:`xlt.config.keys`): ``affects`` names the first stage whose output the key
  changes (``None``: it changes no result, e.g. the logger, run_root, shard settings); ``names_run``
  puts an override of the key into the run directory's name even though it only affects evaluation
  (e.g. ``eval.model``: another model is another run); ``split`` marks keys that only say how work is
  divided between jobs (dropped from the prefetch command too);
* **the hashes of results** (:mod:`xlt.config.keys`, :mod:`xlt.contract`, :mod:`xlt.scoring.jobs`):
  ``translator`` marks a setting of the translator, which translate-test results depend on too (the
  evaluate stage translates with the ``translate`` group's model); ``when=(key, value)`` says a key only
  changes a result while ``key`` has ``value`` (``eval.llm.*`` only for ``eval.scorer=llm``);
  ``per_job=False`` marks an evaluate key that selects which results exist without changing any one of
  them (``eval.benchmarks.*.languages``); ``why`` gives the reason a key is absent from a hash it would
  otherwise enter: every :func:`neutral` key has one, and so has every ``translate`` key translate-test does
  not use (``tests/config/test_hash_coverage.py`` walks every field and holds the schema to this);
  ``omit_default`` marks a key added after results existed that enters the stage and job hashes only when it
  differs from its default (``eval.llm.protocol``: the hashes of results made without it are unchanged).
  ``hash_as`` maps a renamed value to its old spelling, which the hashes take (``translate.engine``:
  ``transformers`` hashes as ``hf``, so translations made under the old name keep their hashes).

A nested dataclass field passes its ``affects``/``names_run`` down to its own fields unless they set their
own. The top-level sections default to the stage that consumes them (``_SECTION_STAGE`` in keys.py).
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Sequence
from typing import Any

# Sentinel: "inherit from the enclosing field / section".
INHERIT = "__inherit__"


def opt(default: Any = dataclasses.MISSING, *, default_factory: Callable[[], Any] | None = None,
        choices: Sequence[str] | Callable[[], Sequence[str]] | None = None, ge: float | None = None, gt: float | None = None,
        le: float | None = None, affects: str | None = INHERIT, names_run: bool | None = None,
        split: bool = False, translator: bool | None = None, when: tuple[str, str] | None = None,
        per_job: bool = True, why: str | None = None, hint: str = "", omit_default: bool = False,
        hash_as: dict[str, str] | None = None) -> Any:
    """A dataclass field with validation and key-table metadata (see the module docstring)."""
    meta: dict[str, Any] = {"affects": affects, "split": split, "per_job": per_job}
    if omit_default:  # enters the hashes only when it differs from its default
        meta["omit_default"] = True
    if hint:  # added to a refusal: how to add a value the choices lack
        meta["hint"] = hint
    if hash_as:  # a renamed value enters the hashes as its old spelling: results made under it keep their hashes
        meta["hash_as"] = dict(hash_as)
    for name, value in (("translator", translator), ("when", when), ("why", why)):
        if value is not None:
            meta[name] = value
    if choices is not None:  # a sequence, or a function returning a registry's names (read when checked)
        meta["choices"] = choices if callable(choices) else tuple(choices)
    for name, bound in (("ge", ge), ("gt", gt), ("le", le)):
        if bound is not None:
            meta[name] = bound
    if names_run is not None:
        meta["names_run"] = names_run
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def neutral(default: Any = dataclasses.MISSING, *, why: str, **kw: Any) -> Any:
    """A field that changes no result (logging, scheduling, where files go); ``why`` says why not."""
    if not why.strip():
        raise ValueError("a neutral field needs its reason (why=...)")
    return opt(default, affects=None, why=why, **kw)


def choices_of(meta: dict[str, Any]) -> tuple[str, ...] | None:
    c = meta.get("choices")
    return tuple(c()) if callable(c) else c


def _describe(meta: dict[str, Any]) -> str:
    if "choices" in meta:
        return "one of " + ", ".join(str(c) for c in choices_of(meta))
    parts = []
    if "gt" in meta:
        parts.append(f"> {meta['gt']}")
    if "ge" in meta:
        parts.append(f">= {meta['ge']}")
    if "le" in meta:
        parts.append(f"<= {meta['le']}")
    return " and ".join(parts)


def check_value(key: str, value: Any, meta: dict[str, Any]) -> str | None:
    """An error message if ``value`` breaks ``meta``'s rule, else None."""
    if value is None:
        return None
    if "choices" in meta and value not in choices_of(meta):
        hint = f"; {meta['hint']}" if "hint" in meta else ""
        return f"{key}={value!r} is not allowed; use {_describe(meta)}{hint}"
    bounds = [b for b in ("ge", "gt", "le") if b in meta]
    if bounds and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return f"{key}={value!r} must be a number ({_describe(meta)})"
    if ("ge" in meta and value < meta["ge"]) or ("gt" in meta and value <= meta["gt"]) or (
            "le" in meta and value > meta["le"]):
        return f"{key}={value!r} is out of range; it must be {_describe(meta)}"
    return None


@functools.cache
def type_hints(schema: type) -> dict[str, Any]:
    """``typing.get_type_hints`` of a schema dataclass, computed once (every stage hash walks the schema)."""
    return typing.get_type_hints(schema)


def dataclass_of(tp: Any) -> type | None:
    """The dataclass a field type holds directly (``X``) or as dict values (``dict[str, X]``)."""
    if dataclasses.is_dataclass(tp):
        return tp
    args = getattr(tp, "__args__", None) or ()
    if getattr(tp, "__origin__", None) is dict and len(args) == 2 and dataclasses.is_dataclass(args[1]):
        return args[1]
    return None


def is_dict_field(tp: Any) -> bool:
    return getattr(tp, "__origin__", None) is dict


def check_values(schema: type, values: Any, prefix: str = "") -> list[str]:
    """Every rule violation in ``values`` (a DictConfig/dict shaped like ``schema``), as messages."""
    errors: list[str] = []
    hints = type_hints(schema)
    for f in dataclasses.fields(schema):
        key = f"{prefix}{f.name}"
        try:
            value = values[f.name] if f.name in values else None
        except Exception:  # an interpolation that cannot resolve yet (e.g. ${eval.llm.model} unset)
            continue
        err = check_value(key, value, dict(f.metadata))
        if err:
            errors.append(err)
        sub = dataclass_of(hints[f.name])
        if sub is None or value is None:
            continue
        if is_dict_field(hints[f.name]):
            for name in value:
                errors.extend(check_values(sub, value[name], f"{key}.{name}."))
        else:
            errors.extend(check_values(sub, value, f"{key}."))
    return errors
