"""The `strata-core` command: the table of commands, the options taken before any of them,
and `main`, which parses a command line and runs its command (cli/NAME.py). User errors end
with one line and exit status 2."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Collection, Sequence

from .. import __version__, log
from ..commands import COMMANDS
from ..errors import StrataError
from ..stopping import ended_when_stopped
from .help import as_help_option
from .options import logging_options
from .usage import (
    PROG,
    Parser,
    UsageError,
    command_word,
    known_command,
    no_command,
    with_closest_option,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on a command's path
if TYPE_CHECKING:
    from ..answer_cache import Recorder
    from . import CommandModule


def command(name: str) -> CommandModule:
    """The module of command ``name`` (cli/NAME.py), imported when it is first needed."""
    module: CommandModule = importlib.import_module(f".{name}", __package__)
    return module


def _parser(only: Collection[str] = COMMANDS) -> argparse.ArgumentParser:
    """The command line's parser; the commands not in ``only`` are listed (for --help) but
    their options are not built."""
    parser = Parser(
        prog=PROG,
        description="Which backend of the Strata engine runs on this PC, on which cards, with\n"
        "which switches, and why.",
        epilog="Diagnostics go to stderr, for people as 'strata-core: LINE', errors as\n"
        "'strata-core: error: LINE' (warnings and debug lines labelled likewise); a command\n"
        "that cannot go on ends with its one error line.\n"
        "Run 'strata-core COMMAND --help' for a command's options and examples.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"{PROG} {__version__}")
    logging_options(parser, False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, record in COMMANDS.items():
        if name not in only:
            commands.add_parser(name, help=record.summary)
            continue
        usage = f"{PROG} run [options] [-- ENGINE ARGS...]" if name == "run" else None
        sub = commands.add_parser(
            name,
            help=record.summary,
            description=record.description,
            epilog=f"examples:\n  {record.examples}",
            usage=usage,
        )
        logging_options(sub, argparse.SUPPRESS)
        command(name).add_arguments(sub)
    return parser


def main(argv: Sequence[str] | None = None, recorder: Recorder | None = None) -> int:
    """Run one command line; ``recorder`` reads the inputs of a cacheable answer."""
    argv = list(sys.argv[1:] if argv is None else argv)
    engine: list[str] | None = None  # run -- ENGINE ARGS: empty for the run config's exe
    if command_word(argv) in ("run", "plan") and "--" in argv:
        at = argv.index("--")
        argv, engine = argv[:at], argv[at + 1 :]
    if "--explain" in argv[:-1]:
        at = argv.index("--explain")
        argv[at : at + 2] = [f"--explain={argv[at + 1]}"]  # --explain --pcie-frac names a flag
    env = dict(os.environ)
    log.configure(fmt=log.format_named(argv))  # a usage error is said in the chosen format too
    as_json = "--json" in argv
    argv = as_help_option(argv)
    word = command_word(argv)
    parser = _parser([word] if word in COMMANDS else [])
    if not argv:  # as git does: a bare call is shown what it can call
        sys.stderr.write(parser.format_help())
        return 2
    try:
        known_command(argv, list(COMMANDS))
        if word is None and not {"-h", "--help", "-V", "--version"} & set(argv):
            raise UsageError(no_command(argv))
        args = parser.parse_args(argv, argparse.Namespace(engine=engine))
        if args.verbose and args.quiet:
            raise UsageError("-v and -q: give one of them")
        for problem in getattr(command(args.command), "ignored_options", lambda _: [])(args):
            raise UsageError(problem)
        log.configure(log.level_from(args.verbose, args.quiet, env), args.log_format)
    except (UsageError, ValueError) as bad:
        message = with_closest_option(str(bad), parser, argv)
        status = _fail(message, 2, as_json)
        if word is None and not as_json:
            sys.stderr.write(f"{parser.format_usage()}Run '{PROG} help' for the commands.\n")
        return status
    # a write past the file size limit fails with EFBIG (one line) instead of killing us; the
    # engine finds it at its default again (cli/engine_start.py)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if env.get("STRATA_CACHE", "1") not in ("0", "1"):
        log.warning(
            f"STRATA_CACHE={env['STRATA_CACHE']}: expected 0 (off) or 1 (on); the answer cache "
            "stays on"
        )
    try:
        with ended_when_stopped():  # Ctrl-C and SIGTERM end every probe child first
            return command(args.command).run(args, env, recorder)
    except StrataError as exc:
        return _fail(str(exc), 2, getattr(args, "json", False))
    except BrokenPipeError:
        raise  # the launcher ends quietly
    except Exception as exc:
        if env.get("STRATA_DEBUG"):
            raise
        why = f"internal error: {type(exc).__name__}: {exc} (STRATA_DEBUG=1 shows where)"
        return _fail(why, 1, getattr(args, "json", False))


def _fail(message: str, status: int, as_json: bool) -> int:
    """The one line of a command that cannot go on; with --json, a JSON answer on stdout too."""
    log.error(message)
    if as_json:
        from .answers import dumps, error_answer

        print(dumps(error_answer(message, status), indent=None))
    return status
