"""``python -m xlt.cluster {line FILE N | count FILE | recipes FILE | rundirs FILE [overrides] | plan FILE
[--shell] [overrides] | stages +recipe=NAME [overrides] | stop-cause | after-stop ...}``: what the sbatch scripts
ask of xlt (slurm/common.sh; ``plan``: the whole sweep resolved once, :mod:`xlt.cluster.plan`).
``after-stop``: the batch shell's verdict once its command stopped (:mod:`xlt.cluster.requeue`)."""

from __future__ import annotations

import sys

from xlt.cluster.requeue import main as after_stop
from xlt.cluster.scheduler import stop_cause
from xlt.errors import ConfigError

USAGE = ("usage: python -m xlt.cluster {line FILE N | count FILE | recipes FILE | rundirs FILE [overrides] | "
         "plan FILE [--shell] [overrides] | "
         "stages +recipe=NAME [overrides] | stop-cause | after-stop STATUS USR1 TERM SIGNAL_TIME RECORD COUNTER}")


def stop_cause_line() -> str:
    """For a batch shell after a ``TERM``: ``requeued-by-slurm``, ``requeue`` or ``stop``, then why (the active
    scheduler's answer, xlt.cluster.backend)."""
    cause = stop_cause()
    verdict = "requeued-by-slurm" if cause.requeued_by_scheduler else "requeue" if cause.preemption else "stop"
    return f"{verdict} {cause.describe()}"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["after-stop"] and len(argv) == 7:  # inside KillWait: nothing else loaded (Hydra, numpy)
        return after_stop(argv[1:])
    from xlt.cluster import plan  # lazy: start-up time
    from xlt.cluster.sweeps import read_sweep, recipe_of, sweep_line  # lazy: start-up time
    from xlt.config.compose import compose  # lazy: start-up time

    try:
        if len(argv) == 3 and argv[0] == "line":
            print("\n".join(sweep_line(argv[1], int(argv[2]))))
        elif len(argv) == 2 and argv[0] == "count":
            print(len(read_sweep(argv[1])))
        elif len(argv) == 2 and argv[0] == "recipes":
            print("\n".join(dict.fromkeys(recipe_of(r) for r in read_sweep(argv[1]))))
        elif len(argv) >= 2 and argv[0] == "rundirs":
            print("\n".join(dict.fromkeys(r.run_dir for r in plan.plan_sweep(argv[1], argv[2:]).runs)))
        elif len(argv) >= 2 and argv[0] == "plan":
            return plan.main(argv[1:])
        elif len(argv) >= 2 and argv[0] == "stages":
            print("\n".join(compose(None, argv[1:]).stages))
        elif argv == ["stop-cause"]:
            print(stop_cause_line())
        else:
            print(USAGE, file=sys.stderr)
            return 2
    except (ConfigError, ValueError) as err:
        print(f"xlt: error: {err}", file=sys.stderr)
        return 2
    return 0
