"""``python -m xlt.cluster ...``: see :mod:`xlt.cluster.commands`."""

import sys

from xlt.cluster.commands import main

sys.exit(main())
