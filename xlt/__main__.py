"""`xlt <command> [args]` (the console script) and `python -m xlt <command>`: the same entry points as
`python -m xlt.<command>`, e.g. `xlt train +recipe=demo`, `xlt report --compare runs/a runs/b --out cmp/`,
`xlt push runs/demo/default --repo-id me/demo --dry-run`, `xlt plugins` (what is registered, and from where),
`xlt status runs/` (a sweep's state at a glance)."""

from __future__ import annotations

import importlib
import sys

import xlt.startup  # noqa: F401 - the entry points' garbage-collector thresholds, before any command's imports

COMMANDS = ("train", "build_data", "translate", "finetune", "evaluate", "report", "prefetch", "push", "plugins",
            "status")


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0].replace("-", "_") if argv else ""
    if command not in COMMANDS:
        print(f"usage: xlt {{{','.join(COMMANDS)}}} [overrides or options]\n"
              f"  e.g. xlt train +recipe=demo; xlt report --compare RUN_DIR ... --out DIR; "
              f"xlt push RUN_DIR --repo-id NAME/MODEL --dry-run", file=sys.stderr)
        sys.exit(0 if command in ("", "_h", "__help", "help") and not argv[1:] else 2)
    module = importlib.import_module(f"xlt.{command}")
    sys.argv = [f"xlt {command}", *argv[1:]]  # what Hydra (or argparse) parses
    if command == "report":
        status = module.option_main(argv[1:])  # --compare, --to-harness, --harness: before Hydra
        if status is not None:
            sys.exit(status)
    result = module.main()
    if command in ("prefetch", "push", "plugins", "status"):  # argparse tools returning their exit status
        sys.exit(result)


if __name__ == "__main__":
    main()
