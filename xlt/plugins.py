"""``xlt plugins [--include-path DIR ...] [--json]`` (or ``python -m xlt.plugins``): every registered
benchmark kind, training source, scorer, MT engine and check kind (``xlt.registry.REGISTRIES``), and
where each comes from: xlt itself, an installed distribution (``name==version``, by its entry point) or a
definition file of a folder (``--include-path``, as ``eval.include_path`` adds one to a run)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from xlt.errors import XltError
from xlt.registry import REGISTRIES, include


def plugins(include_path: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Per registry: its kind (``what``), the config key that selects an entry, its entry-point group and
    each entry's ``name`` and ``origin`` (:meth:`xlt.registry.Registry.origin`), after registering the
    definition files of the folders ``include_path``."""
    include(include_path)
    return [
        {
            "what": reg.what,
            "key": reg.key,
            "group": reg.group,
            "entries": [{"name": name, "origin": reg.origin(name)} for name in reg.names()],
        }
        for reg in REGISTRIES
    ]


def format_plugins(listing: list[dict[str, Any]]) -> str:
    """The listing of :func:`plugins` as text: a block per registry, a line per entry."""
    lines = []
    for reg in listing:
        lines.append(f"{reg['what']}s ({reg['key']}; entry point group {reg['group']}):")
        width = max((len(e["name"]) for e in reg["entries"]), default=0)
        lines += [f"  {e['name']:<{width}}  {e['origin']}" for e in reg["entries"]]
        lines.append("")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="xlt plugins", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--include-path",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of definition files to register first (as eval.include_path=[DIR]); repeatable",
    )
    ap.add_argument("--json", action="store_true", help="print the listing as JSON")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        listing = plugins(args.include_path)
    except XltError as err:
        print(f"xlt plugins: error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(listing, indent=2) if args.json else format_plugins(listing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
