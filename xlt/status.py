"""``xlt status PATH... [--json]`` (or ``python -m xlt.status``): one line per run of a sweep, a run root or
run directories (:mod:`xlt.cluster.status`)."""

from __future__ import annotations

import sys

from xlt.cluster.status import main

if __name__ == "__main__":
    sys.exit(main())
