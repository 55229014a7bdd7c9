"""The training sources: config key (``data.sources.<name>``) -> :class:`Source` class.

The registry (:data:`xlt.registry.SOURCES`) lists xlt's own sources in the order of the built set; an
installed package adds one with an entry point in the group ``xlt.sources``.
"""

from __future__ import annotations

from xlt.data.sources.base import BuildContext, Source, SourceStats
from xlt.registry import SOURCES

__all__ = ["SOURCES", "BuildContext", "Source", "SourceStats"]
