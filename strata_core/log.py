"""Every diagnostic strata-core says goes through here, on stderr.

For people: ``strata-core: <message>``, and every other level labelled as git and pip label
theirs: ``strata-core: error: <message>``, ``strata-core: warning: <message>``,
``strata-core: debug: <message>``, one line each (on a terminal, or with $COLUMNS, wrapped to
its width, the words whole and the later lines indented), control characters escaped, with no
fields (written here: importing structlog costs more than a whole command). For machines,
structlog renders ``--log-format logfmt`` (``level=info msg="..." kind=start_line
timestamp=...``) or ``json``, each line whole, with its level, its fields and its time (ISO
8601, UTC).
The level is ``info`` by default; ``-q`` shows warnings and errors only, ``-v`` adds debug
lines, and STRATA_LOG_LEVEL (debug, info, warning, error) sets it where no option does.
Messages keep their words exactly (the reference page's start lines among them); what a
machine may want besides is in key=value fields such as ``kind``."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from . import people

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on a command's path
if TYPE_CHECKING:
    from typing import Any

PROG = "strata-core"
LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("people", "logfmt", "json")
DEFAULT_LEVEL = "info"
#: the numbers of the standard library's logging levels, without importing it
_NUMBERS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
#: the level and format that configure() set; structlog is set up at the first line said
_settings = {"level": DEFAULT_LEVEL, "format": "people"}
_logger: Any = None


def level_from(verbose: bool, quiet: bool, env: Mapping[str, str]) -> str:
    """-v or -q, else STRATA_LOG_LEVEL, else info; a bad STRATA_LOG_LEVEL is a ValueError."""
    if verbose:
        return "debug"
    if quiet:
        return "warning"
    level = env.get("STRATA_LOG_LEVEL", DEFAULT_LEVEL).strip().lower()
    if level not in LEVELS:
        raise ValueError(
            f"STRATA_LOG_LEVEL={env['STRATA_LOG_LEVEL']}: expected one of {', '.join(LEVELS)}"
        )
    return level


def format_named(argv: Sequence[str]) -> str:
    """The --log-format a command line names, before it is parsed; people where none is."""
    for at, arg in enumerate(argv):
        if arg == "--":  # what follows is the engine's
            break
        flag, eq, value = arg.partition("=")
        if flag == "--log-format":
            value = (value if eq else (argv[at + 1] if at + 1 < len(argv) else "")).lower()
            if value in FORMATS:
                return value
    return "people"



def _for_people(method: str, message: str) -> str:
    label = "" if method == "info" else f"{method}: "
    return f"{PROG}: {label}{message}"


def configure(level: str = DEFAULT_LEVEL, fmt: str = "people") -> None:
    """How every later log call writes: on sys.stderr as it is at each call, so that a
    redirection in force (the answer cache's) sees the lines. structlog is imported at the
    first line for machines that the level lets through."""
    global _logger
    _settings.update(level=level, format=fmt)
    _logger = None


def _structlog_logger() -> Any:
    import structlog

    processors: list[Any] = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.EventRenamer("msg"),
        structlog.processors.LogfmtRenderer(key_order=["level", "msg"])
        if _settings["format"] == "logfmt"
        else structlog.processors.JSONRenderer(),
    ]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(_NUMBERS[_settings["level"]]),
        logger_factory=lambda *_: structlog.PrintLogger(sys.stderr),
        cache_logger_on_first_use=False,
    )
    return structlog.get_logger()


def get() -> Any:
    global _logger
    if _logger is None:
        _logger = _structlog_logger()
    return _logger


def says(level: str) -> bool:
    """Whether a line at ``level`` is said at the level in force (-q: not info)."""
    return _NUMBERS[level] >= _NUMBERS[_settings["level"]]


def for_a_person(level: str) -> bool:
    """Whether lines at ``level`` are said for people on a terminal (where a progress line
    may be drawn too)."""
    return says(level) and _settings["format"] == "people" and sys.stderr.isatty()


def _say(method: str, message: str, fields: dict[str, Any]) -> None:
    if not says(method):
        return
    if _settings["format"] == "people":
        lines = people.wrapped(_for_people(method, message), people.width(sys.__stderr__))
        sys.stderr.write("".join(f"{line}\n" for line in lines))  # one write: threads say lines
        sys.stderr.flush()
    else:
        getattr(get(), method)(message, **fields)


def info(message: str, **fields: Any) -> None:
    _say("info", message, fields)


def warning(message: str, **fields: Any) -> None:
    _say("warning", message, fields)


def error(message: str, **fields: Any) -> None:
    _say("error", message, fields)


def debug(message: str, **fields: Any) -> None:
    _say("debug", message, fields)
