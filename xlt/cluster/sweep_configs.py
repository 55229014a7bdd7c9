"""The validated configs of many runs, each distinct structure composed once: what ``xlt status`` and ``python -m
xlt.cluster plan`` ask of a sweep of hundreds of runs (composing one with Hydra and validating it takes about a
second, most of the cost of both commands).

The runs of a sweep differ mostly in leaf values (``seed=3``, ``training.learning_rate=1e-4``): those are set
on the validated config of the run's *structural* overrides (everything else: recipes and config groups,
``+``/``~`` additions and deletions, lists and dicts, interpolations, ``hydra.*``), the way Hydra applies a
value override itself (``OmegaConf.update(cfg, key, value, merge=True)`` on the composed config, the value
parsed by Hydra's override grammar), then checked by the field's rule (:func:`xlt.config.fields.check_value`)
and the cross-field rules (:func:`xlt.config.rules.cross_field_errors`), as :func:`xlt.config.validate`
checks them. A value is a leaf override only where that is provably the same: a plain ``key=value`` whose key
is a scalar (not a container) in the composed config, outside the keys validation rewrites
(:data:`REWRITTEN`), whose value parses to a scalar without interpolation. Anything else keys a composition of
its own. tests/cluster/test_sweep_configs.py checks the configs against composing each run.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from omegaconf import DictConfig, OmegaConf
from omegaconf.nodes import ValueNode

from xlt.config import XltConfig
from xlt.config.compose import compose
from xlt.config.fields import check_value, dataclass_of, is_dict_field, type_hints
from xlt.config.keys import resolved_as
from xlt.config.rules import cross_field_errors
from xlt.errors import ConfigError

T = TypeVar("T")
# Keys :func:`xlt.config.validate` rewrites after the merge (folders made absolute, an engine's old name): an
# override of one is composed, never set.
REWRITTEN = ("eval.include_path", "translate.engine")
_PLAIN_KEY = re.compile(r"[A-Za-z_]\w*(\.\w+)*$")
_INT = re.compile(r"-?[1-9][0-9]{0,17}$|0$")


def _parser() -> Any:
    from hydra.core.override_parser.overrides_parser import OverridesParser  # lazy: start-up time

    return OverridesParser.create()


def _field_meta(key: str) -> dict[str, Any] | None:
    """The schema field's metadata (its rule) for a dotted key (None: no such field of the schema)."""
    schema: type | None = XltConfig
    parts = key.split(".")
    i = 0
    meta: dict[str, Any] | None = None
    while i < len(parts) and schema is not None:
        fields = {f.name: f for f in dataclasses.fields(schema)}
        if parts[i] not in fields:
            return None
        f = fields[parts[i]]
        meta, tp = dict(f.metadata), type_hints(schema)[f.name]
        schema = dataclass_of(tp)
        i += 2 if is_dict_field(tp) else 1  # a dict of dataclasses: the next part is the entry's name
    return meta if i == len(parts) else None


@dataclasses.dataclass
class _Base:
    cfg: DictConfig | None
    error: str | None
    values: dict[str, Any]  # leaf key -> its value in the base (restored after each run)
    resolved: dict[str, Any] | None = None  # cfg resolved to a plain container (None: it cannot be)
    interpolated: list[str] = dataclasses.field(default_factory=list)  # keys whose value holds an interpolation
    frozen: dict[str, tuple[str, Any]] = dataclasses.field(default_factory=dict)  # key -> (interpolation, value)

    def __post_init__(self) -> None:
        if self.cfg is None:
            return
        try:
            resolved = OmegaConf.to_container(self.cfg, resolve=True)
            raw = OmegaConf.to_container(self.cfg, resolve=False)
        except Exception:  # noqa: BLE001 - an interpolation that cannot resolve: each run resolves its own
            return
        found: list[str] = []
        if not _interpolations(raw, "", found):
            return
        self.resolved, self.interpolated = resolved, found  # type: ignore[assignment]
        for key in found:  # resolved once here, not at every read of every run (OmegaConf parses each time)
            value = _raw_value(self.cfg, key)
            now = OmegaConf.select(self.cfg, key)
            if isinstance(value, str) and not OmegaConf.is_config(now):
                self.frozen[key] = (value, now)
        for key, (_, now) in self.frozen.items():
            OmegaConf.update(self.cfg, key, now, merge=True)

    def thaw(self, leaves: dict[str, Any]) -> list[str]:
        """Put back the interpolations a run's ``leaves`` may change (their text names a leaf, or a key put
        back already); return their keys (:meth:`freeze` after the run)."""
        names = {k.rsplit(".", 1)[-1] for k in leaves}
        thawed: list[str] = []
        changed = True
        while changed:
            changed = False
            for key, (text, _) in self.frozen.items():
                if key not in thawed and any(n in text for n in names):
                    thawed.append(key)
                    names.add(key.rsplit(".", 1)[-1])
                    changed = True
        for key in thawed:
            OmegaConf.update(self.cfg, key, self.frozen[key][0], merge=True)  # type: ignore[arg-type]
        return thawed

    def freeze(self, thawed: list[str]) -> None:
        for key in thawed:
            OmegaConf.update(self.cfg, key, self.frozen[key][1], merge=True)  # type: ignore[arg-type]

    def resolve(self, cfg: DictConfig, leaves: dict[str, Any], thawed: list[str]) -> dict[str, Any] | None:
        """``cfg`` (this base with ``leaves`` set and ``thawed`` put back) resolved: the base's container with
        those keys and every interpolation never frozen read again from ``cfg`` (copied along their paths: the
        base's container is never changed)."""
        if self.resolved is None:
            return None
        out = self.resolved
        for key in [*leaves, *thawed, *(k for k in self.interpolated if k not in self.frozen)]:
            value = OmegaConf.select(cfg, key)
            if OmegaConf.is_config(value):
                value = OmegaConf.to_container(value, resolve=True)
            out = _set_path(out, key.split("."), value)
        return out


def _interpolations(raw: Any, prefix: str, found: list[str]) -> bool:
    """Collect the dotted keys (of dict entries) whose value holds an interpolation; False where a key cannot be
    named by a dotted path (a name with a dot)."""
    for key, value in raw.items():
        if not isinstance(key, str) or "." in key:
            return False
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            if not _interpolations(value, path + ".", found):
                return False
        elif "${" in json.dumps(value, default=str):
            found.append(path)
    return True


def _set_path(tree: dict[str, Any], parts: list[str], value: Any) -> dict[str, Any]:
    out = dict(tree)
    out[parts[0]] = value if len(parts) == 1 else _set_path(tree.get(parts[0]) or {}, parts[1:], value)
    return out


class SweepConfigs:
    """The validated config of each run's overrides, composed once per structure (see the module docstring).

    ``with_config(overrides, use)`` calls ``use(cfg)`` with the run's config and returns its result; the config
    is shared between the runs of one structure (their leaf values set before, restored after): ``use`` must
    not keep it. A run whose config cannot be had raises :class:`ConfigError` (the same message each time)."""

    def __init__(self) -> None:
        self._bases: dict[tuple[str, ...], _Base] = {}
        self.compositions = 0  # how many Hydra compositions were made (the benchmark prints it)
        self._parse: Any = None
        self._values: dict[str, Any] = {}

    def split(self, overrides: Sequence[str]) -> tuple[tuple[str, ...], dict[str, Any]]:
        """``(structural overrides, {leaf key: parsed value})``: a leaf only where setting it is provably what
        composing it gives (module docstring); the base's own node type is checked in :meth:`with_config`."""
        structural: list[str] = []
        leaves: dict[str, Any] = {}
        keys = [o.partition("=")[0] for o in overrides]
        for text, key in zip(overrides, keys, strict=True):
            raw = text.partition("=")[2]
            if "=" not in text or not _PLAIN_KEY.match(key) or key.startswith("hydra.") or key == "hydra" \
                    or any(key == r or key.startswith(r + ".") for r in REWRITTEN) or "$" in raw \
                    or keys.count(key) > 1:
                structural.append(text)
                continue
            value = self._value(raw)
            if value is _NOT_LEAF:
                structural.append(text)
                continue
            leaves[key] = value
        # A structural override of a key above or below a leaf (``model.lora={r:4}`` beside ``model.lora.r=8``):
        # their order decides, so the leaf is composed with it.
        above = {o.partition("=")[0].lstrip("+~") for o in structural}
        for key in [k for k in leaves if any(_nested(k, a) for a in above)]:
            del leaves[key]
        return tuple(o for o, k in zip(overrides, keys, strict=True) if k not in leaves), leaves

    def _value(self, raw: str) -> Any:
        """An override's value as Hydra's grammar parses it, when a scalar (else :data:`_NOT_LEAF`); the same
        text is parsed once (a sweep's ``run_root=...`` on every line)."""
        if raw in self._values:
            return self._values[raw]
        if _INT.match(raw):  # what the grammar makes of a plain decimal integer (the seeds of a sweep)
            value: Any = int(raw)
        else:
            if self._parse is None:
                self._parse = _parser()
            try:
                parsed = self._parse.parse_override(f"k={raw}")
                value = parsed.value()
                if parsed.is_sweep_override() or not (value is None or isinstance(value, (str, int, float, bool))):
                    value = _NOT_LEAF
            except Exception:  # noqa: BLE001 - the composition says what is wrong with it
                value = _NOT_LEAF
        self._values[raw] = value
        return value

    def _base(self, structural: tuple[str, ...], leaves: dict[str, Any]) -> _Base:
        base = self._bases.get(structural)
        if base is None:
            self.compositions += 1
            try:
                base = _Base(compose(None, list(structural)), None, {})
            except ConfigError as err:
                base = _Base(None, str(err), {})
            self._bases[structural] = base
        if base.cfg is not None:
            for key in leaves:
                if key not in base.values:
                    base.values[key] = _raw_value(base.cfg, key)
        return base

    def with_config(self, overrides: Sequence[str], use: Callable[[DictConfig], T]) -> T:
        structural, leaves = self.split(overrides)
        base = self._base(structural, leaves)
        not_leaf = {k for k in leaves if base.values.get(k) is _NOT_LEAF}
        if not_leaf:  # a key that is no scalar of the composed config: composed with the structure
            leaves = {k: v for k, v in leaves.items() if k not in not_leaf}
            structural = tuple(o for o in overrides if o.partition("=")[0] not in leaves)
            base = self._base(structural, leaves)
        if base.cfg is None:
            raise ConfigError(base.error or "the config could not be composed")
        cfg = base.cfg
        thawed = base.thaw(leaves)
        try:
            for key, value in leaves.items():
                OmegaConf.update(cfg, key, value, merge=True)
            errors = [e for k in leaves if (meta := _field_meta(k)) is not None
                      and (e := check_value(k, OmegaConf.select(cfg, k), meta))]
            errors += cross_field_errors(cfg, list(cfg.stages))
            if errors:
                raise ConfigError("invalid config:\n  " + "\n  ".join(errors))
            resolved = base.resolve(cfg, leaves, thawed)
            if resolved is None:
                return use(cfg)
            with resolved_as(cfg, resolved):
                return use(cfg)
        except ConfigError:
            raise
        except Exception as err:  # omegaconf's validation of the node's type: what composing it would say
            raise ConfigError(f"cannot compose {' '.join(overrides)}: {err}") from None
        finally:
            for key in leaves:
                if base.values.get(key) is not _NOT_LEAF:
                    OmegaConf.update(cfg, key, base.values[key], merge=True)
            base.freeze(thawed)


_NOT_LEAF = object()


def _nested(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _raw_value(cfg: DictConfig, key: str) -> Any:
    """The value ``key`` holds in ``cfg`` as written (an interpolation unresolved), or :data:`_NOT_LEAF` when it
    names no scalar value node (a dict or list, or a key the config does not hold)."""
    parent_key, _, last = key.rpartition(".")
    try:
        parent = OmegaConf.select(cfg, parent_key) if parent_key else cfg
    except Exception:  # noqa: BLE001 - an interpolation on the way: not a plain leaf
        return _NOT_LEAF
    if not isinstance(parent, DictConfig) or last not in parent:
        return _NOT_LEAF
    node = parent._get_node(last)
    return node._value() if isinstance(node, ValueNode) else _NOT_LEAF
