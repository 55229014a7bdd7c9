"""Checks of the command line before Hydra composes it, and of ``run_root`` before Hydra uses it.

Hydra reports a misspelled ``+key``, a new entry of a dict of sections or an unusable output folder
with a traceback that does not name the key; these checks name it, with the closest valid key.
"""

from __future__ import annotations

import difflib
import re
import sys
import tempfile
from pathlib import Path

from omegaconf import OmegaConf

from xlt.config.data import source_names
from xlt.config.keys import key_info, leaves
from xlt.config.schema import XltConfig
from xlt.errors import ConfigError, print_error
from xlt.secrets import reject_secret_overrides

# Override keys that are not config values: the recipe group and Hydra's own settings.
_NOT_CONFIG = ("recipe", "hydra")


def _known_keys() -> list[str]:
    return list(leaves(OmegaConf.structured(XltConfig)))


def check_overrides(overrides: list[str]) -> None:
    """Reject secrets, unknown keys and unknown source names among ``key=value`` overrides."""
    SOURCES = source_names()

    reject_secret_overrides(overrides)
    for ov in overrides:
        key = ov.split("=", 1)[0].lstrip("+~")
        if key.split(".")[0].split("/")[0] in _NOT_CONFIG:
            continue
        info = key_info(key)
        if info is None:
            close = difflib.get_close_matches(key, _known_keys(), n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ConfigError(f"unknown config key '{key}' in override '{ov}'{hint}")
        parts = key.split(".")
        if parts[:2] == ["data", "sources"] and len(parts) > 2 and parts[2] not in SOURCES:
            raise ConfigError(f"data.sources.{parts[2]}: unknown source; known sources: {sorted(SOURCES)} (a new one "
                              "is a Source subclass in an installed package's entry point group 'xlt.sources')")


# Characters of a value that Hydra's override grammar reads as syntax unless the value is quoted.
_HYDRA_SPECIAL = set("=,[]{}()'\" \\$:*?<>!&|;#~`%@")
_SHELL_SAFE_IN_DOUBLE_QUOTES = set('"$`\\!')


def override_form(key: str, value: object) -> str:
    """``key=value`` as typed on a shell command line so that both the shell and Hydra read ``value`` as it
    is: a value with characters Hydra's grammar reads (``=`` and ``,`` of xlt's run-directory names, spaces,
    brackets) is quoted for Hydra and the shell, e.g. ``"eval.model='runs/demo/a=1,b=2/model'"``."""
    text = str(value)
    if not set(text) & _HYDRA_SPECIAL:
        return f"{key}={text}"
    inner = text.replace("\\", "\\\\").replace("'", "\\'")
    hydra = f"{key}='{inner}'"
    if set(hydra) & _SHELL_SAFE_IN_DOUBLE_QUOTES:
        import shlex

        return shlex.quote(hydra)
    return f'"{hydra}"'


def check_parsable(overrides: list[str]) -> None:
    """Raise :class:`ConfigError` for an override Hydra's grammar cannot parse, with the quoted form to type
    (a path copied from xlt's run directories holds ``=`` and ``,``: unquoted, Hydra stops at them)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    parser = OverridesParser.create()
    for ov in overrides:
        try:
            parser.parse_overrides([ov])
        except OverrideParseException as err:
            key, _, value = ov.partition("=")
            why = str(err).splitlines()[0]
            raise ConfigError(
                f"the override {ov!r} cannot be parsed ({why}): its value holds characters Hydra reads as syntax "
                f"({', '.join(repr(c) for c in sorted(set(value) & _HYDRA_SPECIAL)) or 'see above'}). Quote the "
                f"value for Hydra, inside shell quotes:\n    {override_form(key, value)}") from None


# Sections that are dicts of entries: a command line may add an entry (``+eval.benchmarks.NAME.kind=KIND``).
_ENTRY_SECTIONS = ("eval.benchmarks", "data.sources")
_NEW_ENTRY = re.compile(r"^\+{0,2}(" + "|".join(re.escape(s) for s in _ENTRY_SECTIONS) + r")\.([^.=]+)\.[^=]+=")


def new_entries(overrides: list[str]) -> list[tuple[str, str]]:
    """``(section, name)`` of each dict entry the overrides set a key of (``eval.benchmarks.xcsqa.kind=...``).

    Hydra cannot build a new entry of a typed dict from ``+a.b.name.key=v`` (it starts the entry as a plain
    ``{}``), so the schema registered for this composition holds each named entry with its defaults
    (:func:`xlt.config.register`) and the overrides set its keys (:func:`entry_overrides`)."""
    return list(dict.fromkeys((m.group(1), m.group(2)) for ov in overrides if (m := _NEW_ENTRY.match(ov))))


def entry_overrides(overrides: list[str]) -> list[str]:
    """``overrides`` with the ``+`` dropped from keys of entries :func:`new_entries` names: the schema holds them."""
    return [ov.lstrip("+") if _NEW_ENTRY.match(ov) else ov for ov in overrides]


def check_run_root(root: str) -> None:
    """Raise :class:`ConfigError` naming ``run_root`` when it is not a writable folder (or creatable)."""
    path = Path(str(root)).expanduser()
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise ConfigError(f"run_root={root}: {probe} is a file, not a folder; point run_root at a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".xlt-write-test."):
            pass
    except OSError as err:
        raise ConfigError(f"run_root={root}: cannot create or write there ({err.strerror or err}); "
                          "point run_root at a writable folder") from None


def checked_run_root(root: str) -> str:
    """``run_root`` for Hydra's ``hydra.run.dir``, or ``xlt: error:`` (exit 2) naming it when it cannot hold runs.

    Hydra calls this resolver before it creates the run directory, so a bad ``run_root`` is named here
    instead of surfacing as a traceback from Hydra's ``mkdir``.
    """
    try:
        check_run_root(root)
    except ConfigError as err:
        sys.exit(print_error(err))
    return root
