"""Where the Hydra configs are: ``conf/`` (with the ``recipe`` group from ``recipes/``) inside the package.

In the repository, ``conf/`` and ``recipes/`` sit at the top level, and ``xlt/conf`` links to them; a
built wheel carries them as package data under ``xlt/conf``. Either way Hydra is pointed at the copy
found by package, so ``python -m xlt.train`` works from any working directory. ``XLT_CONF_DIR`` points
elsewhere (a whole replacement config tree); a user's own recipes go on Hydra's search path instead
(``hydra.searchpath=[file:///path/to/my_conf]``, with ``recipe/<name>.yaml`` inside).
"""

from __future__ import annotations

import os
from importlib.resources import files

CONF_DIR = os.environ.get("XLT_CONF_DIR") or str(files("xlt") / "conf")
