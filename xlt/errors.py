"""Errors that end a run with a clear message instead of a stack trace.

Every error a user can fix derives from :class:`XltError`; the entry points print its message and
exit with status 2.
"""

from __future__ import annotations

import sys

# The exit status of a run ended by an XltError.
ERROR_EXIT = 2


class XltError(Exception):
    """A problem the user can fix; its message says what went wrong and how to fix it."""


class ConfigError(XltError, ValueError):
    """Bad configuration: unknown key, wrong value, unknown recipe or stage."""


class DataError(XltError, ValueError):
    """Malformed input data. The message names the file, the row and the field."""


class HubUnavailableError(XltError):
    """A model, tokenizer or dataset could not be loaded from the Hugging Face Hub or the cache."""


def print_error(err: XltError) -> int:
    """Print ``err`` as the entry points do (``xlt: error: <message>`` on stderr, after a blank line) and
    return the exit status (:data:`ERROR_EXIT`)."""
    print(f"\nxlt: error: {err}", file=sys.stderr)
    return ERROR_EXIT
