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
    from . import Command

#: each command's one-line help, its description and examples (`strata-core COMMAND --help`)
COMMANDS = {
    "plugins": (
        "list the architecture plugins",
        "Each architecture plugin: its distribution, version, API version, targets and status\n"
        "(and why), then each GPU plugin's code objects and the compiler that built them.",
        "strata-core plugins\n  strata-core plugins --check --json",
    ),
    "devices": (
        "list the GPUs (AMD and NVIDIA) and who runs each",
        "The GPUs of this PC: AMD cards by HIP number, NVIDIA cards by CUDA ordinal, each with\n"
        "its target, family, VRAM, support status and the plugin that runs it; * marks the\n"
        "cards a run uses.",
        "strata-core devices\n  strata-core devices --gpus 1,0 --json",
    ),
    "env": (
        "what a report of a run needs: versions, drivers, devices, variables",
        "Everything a bug report needs in one command: strata and its plugins, Python, the OS,\n"
        "the CPU, numpy and its BLAS, ROCm, the GPU drivers and runtimes, the BLAS libraries,\n"
        "the devices, the variables that change a plan and the run config.",
        "strata-core env > report.txt",
    ),
    "plan": (
        "show what would run and why; changes nothing",
        "What would run on the main card (or a card named with --device) and why: the switches\n"
        "strata sets, with their reasons (-v: every switch, the engine's built-ins too), the\n"
        "engine arguments, kernels, tuning tables, package and start lines. With -- ENGINE ARGS:\n"
        "the plan `run -- ENGINE ARGS` follows (the engine's --kv, --kv-resident, --gpu and\n"
        "--backend are facts of the run).",
        "strata-core plan\n  strata-core plan --device gfx1201 --kv int8 --pack IQ3_S\n"
        "  strata-core plan --json -- build-hip/strata --serve --kv int8 --gpu 1\n"
        "  strata-core plan --explain STRATA_HIP_WMMA\n"
        "  strata-core plan --toml --output strata.toml",
    ),
    "run": (
        "run the workload on this PC's backend, or start the engine: run -- ENGINE ARGS",
        "Without --: plan, then run a workload of decode and prompt steps on the plan's\n"
        "backend and check every result. With -- ENGINE ARGS...: become the engine, with the\n"
        "plan's environment and arguments (the backend and the chosen cards among them); with\n"
        "nothing after --, the run config's exe starts.",
        "strata-core run\n  strata-core run --gpus 1,0 -- build-hip/strata --serve",
    ),
    "tune": (
        "calibrate the card's prompt GEMM library (the host backend's where no card runs) "
        "and write a table",
        "Calibrate the prompt GEMM library of the card (or the host backend) and write a\n"
        "tuning table; with --switches, measure the calibratable switches instead.",
        "strata-core tune\n  strata-core tune --host --tokens 256,512\n"
        "  strata-core tune --switches --dry-run",
    ),
    "table": (
        "tuning tables",
        "Tuning tables: `table check` validates them by the lookup's rules.",
        "strata-core table check ~/.local/share/strata/tuning/*.txt",
    ),
    "help": (
        "show the help of strata-core, or of one command (its --help)",
        "The help of strata-core, or of COMMAND (the same as strata-core COMMAND --help).",
        "strata-core help\n  strata-core help plan",
    ),
}


def command(name: str) -> Command:
    """The module of command ``name`` (cli/NAME.py), imported when it is first needed."""
    module: Command = importlib.import_module(f".{name}", __package__)
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
    for name, (short, description, examples) in COMMANDS.items():
        if name not in only:
            commands.add_parser(name, help=short)
            continue
        usage = f"{PROG} run [options] [-- ENGINE ARGS...]" if name == "run" else None
        sub = commands.add_parser(
            name,
            help=short,
            description=description,
            epilog=f"examples:\n  {examples}",
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
