"""Registry of the training sources: config key (``data.sources.<name>``) -> :class:`Source` class.

Registration order is the order of the sources in the built set. To add a source, write a module with a
:class:`~xlt.data.sources.base.Source` subclass and add it here.
"""

from __future__ import annotations

from xlt.data.sources.base import BuildContext, Source, SourceStats
from xlt.data.sources.mcscript import MCScript
from xlt.data.sources.mctest import MCTest
from xlt.data.sources.multirc import MultiRC
from xlt.data.sources.race import Race
from xlt.data.sources.reclor import ReClor
from xlt.data.sources.sciq import SciQ

SOURCES: dict[str, type[Source]] = {cls.name: cls for cls in (Race, SciQ, MultiRC, MCTest, MCScript, ReClor)}

__all__ = ["SOURCES", "BuildContext", "Source", "SourceStats"]
