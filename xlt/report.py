"""`python -m xlt.report +recipe=<name> [overrides]`: the report stage of one run (merges eval shards).

Comparison mode, handled before Hydra sees the arguments::

    python -m xlt.report --compare runs/a/default runs/a/seed=2 runs/b/default --out cmp/

(the first run is the baseline of the paired tests; runs differing only in ``seed`` are grouped; an
lm-evaluation-harness output folder is a system too). lm-evaluation-harness's files, both ways::

    python -m xlt.report --to-harness runs/llm_5shot/default harness_out/
    python -m xlt.report --harness harness_out/ --out harness_report/
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


def to_harness_main(argv: list[str]) -> int:
    """``--to-harness RUN_DIR OUT``: a finished LLM run's results as lm-evaluation-harness's output folder."""
    parser = argparse.ArgumentParser(prog="python -m xlt.report --to-harness",
                                     description="Write a finished LLM run's results as lm-evaluation-harness writes "
                                                 "its output folder (--output_path with --log_samples)")
    parser.add_argument("--to-harness", nargs=2, required=True, metavar=("RUN_DIR", "OUT"))
    parser.add_argument("--no-samples", action="store_true", help="write the results file only (no sample logs)")
    args = parser.parse_args(argv)
    from xlt.reporting.harness.export import export_run  # lazy: start-up time

    run_dir, out = args.to_harness
    try:
        folder = export_run(run_dir, out, samples=not args.no_samples)
    except XltError as err:
        return print_error(err)
    print(f"lm-evaluation-harness files written to {folder}")
    return 0


def harness_report_main(argv: list[str]) -> int:
    """``--harness FOLDER --out DIR``: the report of one lm-evaluation-harness output folder, as of a run."""
    parser = argparse.ArgumentParser(prog="python -m xlt.report --harness",
                                     description="Report an lm-evaluation-harness output folder as xlt reports a run "
                                                 "(per-language tables, summaries by script, family and resource "
                                                 "level, plots); to compare it with runs: --compare RUN_DIR FOLDER")
    parser.add_argument("--harness", required=True, metavar="FOLDER")
    parser.add_argument("--out", required=True, help="folder for the report (an xlt run directory of the folder)")
    parser.add_argument("--bootstrap-samples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals")
    args = parser.parse_args(argv)
    from xlt.reporting.harness.report import harness_report  # lazy: start-up time

    try:
        path = harness_report(args.harness, args.out, samples=args.bootstrap_samples, seed=args.seed)
    except XltError as err:
        return print_error(err)
    print(f"report written to {path}")
    return 0


def option_main(argv: list[str]) -> int | None:
    """The report entry point's modes handled before Hydra (None: none of them, Hydra's)."""
    for flag, fn in (("--compare", compare_main), ("--to-harness", to_harness_main), ("--harness", harness_report_main)):
        if flag in argv:
            return fn(argv)
    return None


if __name__ == "__main__":
    status = option_main(sys.argv[1:])
    if status is not None:
        sys.exit(status)
    main()
