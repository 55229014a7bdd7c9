"""`python -m xlt.report +recipe=<name> [overrides]`: the report stage of one run (merges eval shards).

Comparison mode, handled before Hydra sees the arguments::

    python -m xlt.report --compare runs/a/default runs/a/seed=2 runs/b/default --out cmp/

(the first run is the baseline of the paired tests; runs differing only in ``seed`` are grouped).
"""

from __future__ import annotations

import argparse
import sys

from xlt.cli import make_main
from xlt.errors import XltError, print_error

main = make_main(["report"])


def compare_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m xlt.report --compare", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", nargs="+", required=True, metavar="RUN_DIR",
                        help="run directories to compare; the first is the baseline")
    parser.add_argument("--out", required=True, help="folder for the comparison files")
    parser.add_argument("--bootstrap-samples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0, help="seed of the paired bootstrap")
    parser.add_argument("--include-path", action="append", default=[], metavar="FOLDER",
                        help="a compared run's eval.include_path folder whose *.py definition files may be run "
                             "(repeat for several); without it a comparison runs no code of the runs it compares")
    parser.add_argument("--item-share", type=float, default=None, metavar="SHARE",
                        help="item report: flag an (item, language) every system gets wrong when the item is right in "
                             "at least this share of its other languages (default 0.8)")
    args = parser.parse_args(argv)
    from xlt.reporting.compare_runs import compare_runs  # lazy: start-up time
    from xlt.reporting.items import DEFAULT_SHARE  # lazy: start-up time

    share = DEFAULT_SHARE if args.item_share is None else args.item_share
    if not 0 < share <= 1:
        parser.error(f"--item-share must be in (0, 1], got {share}")

    try:
        compare_runs(args.compare, args.out, samples=args.bootstrap_samples, seed=args.seed,
                     include_paths=args.include_path, item_share=share)
    except XltError as err:
        return print_error(err)
    print(f"comparison written to {args.out}/compare.md (findings of the papers included; page: compare.html)")
    return 0


if __name__ == "__main__":
    if "--compare" in sys.argv[1:]:
        sys.exit(compare_main(sys.argv[1:]))
    main()
