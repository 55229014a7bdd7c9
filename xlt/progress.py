"""xlt's progress bars: tqdm bars that ``TQDM_DISABLE=1`` silences like any tqdm bar.

tqdm reads ``TQDM_*`` environment variables only as defaults, and xlt's bars set ``disable=`` themselves
(no bar for no work, or a scorer's ``progress=False``), which would override the variable.
"""

from __future__ import annotations

import os
from typing import Any

from tqdm.auto import tqdm


def disabled_by_env() -> bool:
    """Whether ``TQDM_DISABLE`` asks for no progress bars (set, and not 0/false/no)."""
    return os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", "0", "false", "no")


def progress_bar(*, disable: bool | None = False, **kw: Any) -> tqdm:
    """A tqdm bar, off when ``disable`` (None: off without a terminal, tqdm's rule) or ``TQDM_DISABLE`` says so."""
    return tqdm(disable=True if disabled_by_env() else disable, **kw)
