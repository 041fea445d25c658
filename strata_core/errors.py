"""Errors that end a command with one line and exit status 2."""

from .people import one_line


class StrataError(Exception):
    """A user-facing error: bad input, bad option, nothing to run. Its text is the whole message,
    on one line: a line break or other control character in it (a file name may hold one) is
    written as an escape."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class PluginError(StrataError):
    """A plugin broke its contract."""


class NoGpuRun(Exception):
    """The card cannot run the workload here; the message says why in one line."""
