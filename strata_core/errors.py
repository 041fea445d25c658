"""Errors that end a command with one line and exit status 2."""


class StrataError(Exception):
    """A user-facing error: bad input, bad option, nothing to run. Its text is the whole message."""


class PluginError(StrataError):
    """A plugin broke its contract."""


class NoGpuRun(Exception):
    """The card cannot run the workload here; the message says why in one line."""
