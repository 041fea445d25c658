"""The `strata-core` command. User errors end with one line and exit status 2."""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from .. import __version__, log
from ..answer_cache import Recorder
from ..api.vocabulary import KV_TYPES, OS_NAMES, PACKS, READERS
from ..digits import is_digits
from ..errors import StrataError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on a command's path
if TYPE_CHECKING:
    from typing import Any, NoReturn

    from ..plan.detection import PlanRequest

PROG = "strata-core"


class UsageError(Exception):
    """A command line that cannot be parsed; `main` says it in one line, in the chosen log
    format, and with --json as a JSON answer too."""


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written; an option's help wrapped at spaces only, so that a name such
    as deep-context-k2048 stays whole."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


class _Parser(argparse.ArgumentParser):
    """argparse with a usage error as a UsageError (a misspelt choice with the closest one),
    whole option names only (an abbreviation would change its meaning when an option is
    added), every fixed set of values taken in any case (--kv INT8 is int8), and help text
    kept as written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        if isinstance(action.choices, list | tuple) and arg_string not in action.choices:
            folded = {str(c).casefold(): c for c in action.choices}
            arg_string = str(folded.get(arg_string.casefold(), arg_string))
        return super()._get_value(action, arg_string)

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix(PROG).strip()
        message += closest_choice(message)
        raise UsageError(f"{command}: {message}" if command else message)


def closest(word: str, known: Sequence[str]) -> str:
    """The did-you-mean ("; did you mean KNOWN?") of a misspelt word, else nothing."""
    import difflib

    folded = {k.casefold(): k for k in known}
    close = difflib.get_close_matches(word.casefold(), list(folded), n=1)
    return f"; did you mean {folded[close[0]]}?" if close else ""


def closest_choice(message: str) -> str:
    """The did-you-mean of argparse's "invalid choice: 'chek' (choose from 'check')"."""
    import re

    found = re.search(r"invalid choice: '(.*)' \(choose from (.*)\)$", message)
    if found is None:
        return ""
    return closest(found[1], re.findall(r"'([^']*)'", found[2]))


def positive_int(text: str) -> int:
    value = int(text) if is_digits(text.strip().lstrip("+")) else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1, got {text!r}")
    return value


def gib(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number of GiB from 0, got {text!r}")
    return value


def target_name(text: str) -> str:
    """A target as the runtimes write it, from any case (GFX1201 is gfx1201)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a target such as gfx1201, got nothing")
    return text.strip().lower()


def _logging_options(parser: argparse.ArgumentParser, default: Any) -> None:
    """-v, -q and --log-format, taken before the command and after it; after it they have no
    default (``default`` is argparse.SUPPRESS) so that they do not undo one given before."""
    level = parser.add_mutually_exclusive_group()
    level.add_argument(
        "-v", "--verbose", action="store_true", default=default, help="say debug lines too"
    )
    level.add_argument(
        "-q", "--quiet", action="store_true", default=default, help="say warnings and errors only"
    )
    parser.add_argument(
        "--log-format",
        choices=log.FORMATS,
        default="people" if default is not argparse.SUPPRESS else default,
        help="stderr lines for people (default), or key=value (logfmt) or JSON for machines",
    )


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
        "engine arguments, kernels, tuning tables, package and start lines.",
        "strata-core plan\n  strata-core plan --device gfx1201 --kv int8 --pack IQ3_S\n"
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


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``only``, the other commands are listed (for --help)
    but their options are not built."""
    parser = _Parser(
        prog=PROG,
        description="Which backend of the Strata engine runs on this PC, on which cards, with\n"
        "which switches, and why.",
        epilog="Diagnostics go to stderr, for people as 'strata-core: LINE', errors as\n"
        "'strata-core: error: LINE' (warnings and debug lines labelled likewise); a command\n"
        "that cannot go on ends with its one error line.\n"
        "Run 'strata-core COMMAND --help' for a command's options and examples.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"{PROG} {__version__}")
    _logging_options(parser, False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (short, description, examples) in COMMANDS.items():
        if only is not None and name != only:
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
        _logging_options(sub, argparse.SUPPRESS)
        OPTIONS[name](sub)
    return parser


def _plugins_options(plugins: argparse.ArgumentParser) -> None:
    plugins.add_argument("--json", action="store_true", help="print JSON")
    plugins.add_argument(
        "--check",
        action="store_true",
        help="hold each installed architecture plugin against every hook contract",
    )


def _devices_options(devices: argparse.ArgumentParser) -> None:
    _scan_options(
        devices,
        "run config whose gpu is used (default: $STRATA_CONFIG, else ./strata.toml if present)",
    )


def _env_options(env: argparse.ArgumentParser) -> None:
    _scan_options(env, "run config (default: $STRATA_CONFIG, else ./strata.toml if present)")


def _plan_options(plan: argparse.ArgumentParser) -> None:
    output = plan.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print JSON")
    output.add_argument(
        "--toml", action="store_true", help="print a run config that reproduces this plan"
    )
    output.add_argument("--explain", metavar="NAME", help="say where one value came from")
    plan.add_argument(
        "--output",
        metavar="FILE",
        type=Path,
        help="with --toml: write the run config to FILE (atomically; an existing FILE only "
        "with --force)",
    )
    plan.add_argument(
        "--force", action="store_true", help="with --output: replace an existing FILE"
    )
    _planning_options(plan)
    _detection_options(plan)


def _run_options(run: argparse.ArgumentParser) -> None:
    run.add_argument("--json", action="store_true", help="print JSON")
    run.add_argument("--threads", type=positive_int, help="host threads (default: one per core)")
    _planning_options(run)
    _detection_options(run)


def _tune_options(tune: argparse.ArgumentParser) -> None:
    from ..plan import profile

    tune.add_argument(
        "--output",
        metavar="FILE",
        help="table to write, or its folder (one that exists, or ends in /) (default: "
        "$STRATA_TUNING_DIR or ~/.local/share/strata/tuning), named for the card or CPU and "
        "the library",
    )
    tune.add_argument(
        "--tokens",
        metavar="LIST",
        help="token buckets (default: 256,...,8192 on a card, 256,512,1024,2048 on the host)",
    )
    tune.add_argument(
        "--host", action="store_true", help="calibrate the host backend even where a card runs"
    )
    _sysfs_option(tune)
    tune.add_argument(
        "--case",
        action="append",
        metavar="T,op,N,K,dtype",
        help="measure this case only (repeatable)",
    )
    tune.add_argument("--repeats", type=int, default=7, help="alternating rounds per case")
    tune.add_argument(
        "--switches",
        action="store_true",
        help="measure the calibratable switches in on/off pairs; write winners that repeat "
        "into the run config's env",
    )
    tune.add_argument(
        "--config",
        metavar="FILE",
        type=Path,
        help="with --switches: the run config to write (default: ./strata.toml)",
    )
    tune.add_argument(
        "--profile",
        metavar="NAME|FILE",
        type=profile.named,
        help="model profile of the shapes to measure (with --switches, or on a card): "
        f"{', '.join(profile.SHIPPED)} or a file (default: {profile.DEFAULT_NAME})",
    )
    tune.add_argument("--os", choices=OS_NAMES, help="with --switches: the OS the run is for")
    tune.add_argument(
        "--kv-streaming", action="store_true", help="with --switches: the run streams the KV cache"
    )
    tune.add_argument(
        "--min-gain",
        type=float,
        help="how much faster than the default a winner must be (default: 1.05 for a table, "
        "1.03 for --switches)",
    )
    tune.add_argument(
        "--budget",
        type=float,
        metavar="SECONDS",
        help="with --switches: the longest a switch is measured (default 10)",
    )
    tune.add_argument(
        "--dry-run",
        action="store_true",
        help="with --switches: show the change to the run config as a diff; write nothing",
    )


def _help_options(help_: argparse.ArgumentParser) -> None:
    help_.add_argument("topic", nargs="?", metavar="COMMAND", help="the command to explain")


def _table_options(table: argparse.ArgumentParser) -> None:
    table_commands = table.add_subparsers(dest="table_command", required=True, metavar="ACTION")
    check = table_commands.add_parser(
        "check",
        help="validate tables (each FILE, or every *.txt in a folder); exit 1 if any is refused",
        description="Validate tuning tables by the lookup's rules; every problem is "
        "path:line: what.",
        epilog=f"examples:\n  {COMMANDS['table'][2]}",
    )
    _logging_options(check, argparse.SUPPRESS)
    check.add_argument("files", nargs="+", type=Path, metavar="FILE")
    check.add_argument("--json", action="store_true", help="answer in JSON")


#: what each command takes besides -v, -q and --log-format
OPTIONS = {
    "plugins": _plugins_options,
    "devices": _devices_options,
    "env": _env_options,
    "plan": _plan_options,
    "run": _run_options,
    "tune": _tune_options,
    "table": _table_options,
    "help": _help_options,
}


def sysfs_path(text: str) -> Path:
    """A sysfs root, or ``example:NAME``, one of the example machines strata ships."""
    from ..detect.examples import PREFIX, example_name

    if text.startswith(PREFIX):
        try:
            example_name(text)
        except StrataError as unknown:
            raise argparse.ArgumentTypeError(str(unknown)) from None
    return Path(text)


def _sysfs_option(parser: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup) -> None:
    from ..detect.examples import listing

    parser.add_argument(
        "--sysfs",
        metavar="DIR",
        type=sysfs_path,
        help="sysfs root to read (default: $STRATA_SYSFS or /sys), or example:NAME, a machine "
        f"strata ships: {listing()}",
    )


def _scan_options(parser: argparse.ArgumentParser, config_help: str) -> None:
    """What `devices` and `env` take: --json, the sysfs root, the run config, the cards."""
    parser.add_argument("--json", action="store_true", help="print JSON")
    _sysfs_option(parser)
    parser.add_argument("--config", metavar="FILE", type=Path, help=config_help)
    _detection_options(parser)


def _planning_options(parser: argparse.ArgumentParser) -> None:
    from ..plan import profile

    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--device",
        metavar="GFX",
        type=target_name,
        help="plan for a card that is not in this PC",
    )
    _sysfs_option(target)
    parser.add_argument(
        "--integrated", action="store_true", help="with --device: the card is an integrated GPU"
    )
    parser.add_argument("--os", choices=OS_NAMES, help="plan for this OS (default: this one)")
    parser.add_argument("--kv", choices=KV_TYPES, help="KV cache type (default: the config's --kv)")
    parser.add_argument(
        "--pack",
        choices=PACKS,
        metavar="FORMAT",
        help=f"model pack format: {', '.join(PACKS)}",
    )
    parser.add_argument(
        "--kv-streaming",
        action="store_true",
        help="KV streaming on (the config's --kv-resident also says so)",
    )
    parser.add_argument(
        "--vision",
        choices=READERS,
        help="the picture reader (default: the GPU's from 24 GB of VRAM, else the CPU's)",
    )
    parser.add_argument(
        "--ple-table-gib",
        type=gib,
        metavar="GIB",
        help="PLE table size (default: the size of the config's --ple-gguf)",
    )
    parser.add_argument(
        "--profile",
        metavar="NAME|FILE",
        type=profile.named,
        help=f"model profile of the workload: {', '.join(profile.SHIPPED)} or a file "
        f"(default: {profile.DEFAULT_NAME})",
    )
    parser.add_argument(
        "--hipblaslt",
        metavar="VERSION",
        help="hipBLASLt version to plan for (1.4.1 or 100401; default: probed)",
    )
    parser.add_argument(
        "--rocblas",
        metavar="VERSION",
        help="rocBLAS version to plan for (5.6.0.8d1ae90e; default: probed)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        type=Path,
        help="run config (default: $STRATA_CONFIG, else ./strata.toml if present)",
    )


def _detection_options(parser: argparse.ArgumentParser) -> None:
    probe = parser.add_mutually_exclusive_group()
    probe.add_argument(
        "--hip",
        dest="hip",
        action="store_true",
        default=None,
        help="ask the HIP runtime too (default: only when reading /sys)",
    )
    probe.add_argument("--no-hip", dest="hip", action="store_false")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--gpu", type=int, metavar="N", help="use HIP device N")
    choice.add_argument("--gpus", metavar="LIST", help="use these HIP devices (1,0 or all)")
    choice.add_argument("--gpu-roles", metavar="ROLES", help="say the roles: 1=main,0=helper")


def main(argv: Sequence[str] | None = None, recorder: Recorder | None = None) -> int:
    """Run one command line; ``recorder`` reads the inputs of a cacheable answer."""
    argv = list(sys.argv[1:] if argv is None else argv)
    engine: list[str] | None = None  # run -- ENGINE ARGS: empty for the run config's exe
    if _command_word(argv) == "run" and "--" in argv:
        at = argv.index("--")
        argv, engine = argv[:at], argv[at + 1 :]
    if "--explain" in argv[:-1]:
        at = argv.index("--explain")
        argv[at : at + 2] = [f"--explain={argv[at + 1]}"]  # --explain --pcie-frac names a flag
    env = dict(os.environ)
    log.configure(fmt=log.format_named(argv))  # a usage error is said in the chosen format too
    as_json = "--json" in argv
    argv = _help_as_option(argv)
    word = _command_word(argv)
    parser = _parser(word if word in COMMANDS else None)
    if not argv:  # as git does: a bare call is shown what it can call
        sys.stderr.write(parser.format_help())
        return 2
    try:
        _known_command(argv)
        if word is None and not {"-h", "--help", "-V", "--version"} & set(argv):
            raise UsageError(_no_command(argv))
        args = parser.parse_args(argv)
        if args.verbose and args.quiet:
            raise UsageError("-v and -q: give one of them")
        for problem in _ignored_options(args, engine):
            raise UsageError(problem)
        log.configure(log.level_from(args.verbose, args.quiet, env), args.log_format)
    except (UsageError, ValueError) as bad:
        message = _with_closest_option(str(bad), parser, argv)
        status = _fail(message, 2, as_json)
        if word is None and not as_json:
            sys.stderr.write(f"{parser.format_usage()}Run '{PROG} help' for the commands.\n")
        return status
    # a write past the file size limit fails with EFBIG (one line) instead of killing us
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if env.get("STRATA_CACHE", "1") not in ("0", "1"):
        log.warning(
            f"STRATA_CACHE={env['STRATA_CACHE']}: expected 0 (off) or 1 (on); the answer cache "
            "stays on"
        )
    try:
        if args.command == "plugins":
            from .plugins import run_plugins

            return run_plugins(args, env)
        if args.command == "run":
            from .run import run

            return run(plan_request(args, env, recorder, engine), args.json, engine)
        if args.command == "tune":
            from .tune import run_tune

            return run_tune(args, env)
        if args.command == "table":
            from .table import run_table_check

            return run_table_check(args)
        if args.command == "env":
            from .env import run_env

            return run_env(plan_request(args, env, recorder), args.json)
        if args.command == "plan":
            from .plan import run_plan

            return run_plan(plan_request(args, env, recorder), args)
        from .devices import run_devices

        return run_devices(plan_request(args, env, recorder), args.json, args.verbose)
    except StrataError as exc:
        return _fail(str(exc), 2, getattr(args, "json", False))
    except BrokenPipeError:
        raise  # the launcher ends quietly
    except Exception as exc:
        if env.get("STRATA_DEBUG"):
            raise
        why = f"internal error: {type(exc).__name__}: {exc} (STRATA_DEBUG=1 shows where)"
        return _fail(why, 1, getattr(args, "json", False))


def _command_word(argv: Sequence[str]) -> str | None:
    """The command a command line names: its first word that is no option nor its value."""
    words = iter(argv)
    for arg in words:
        if arg == "--log-format":
            next(words, None)
        elif not arg.startswith("-"):
            return arg
    return None


def _help_as_option(argv: list[str]) -> list[str]:
    """`help` is `--help`, and `help COMMAND` is `COMMAND --help`."""
    if _command_word(argv) != "help":
        return argv
    at = argv.index("help")
    return [*argv[:at], *argv[at + 1 :], "--help"]


def _no_command(argv: Sequence[str]) -> str:
    """What a command line of options alone lacks: a command, or an option it misspelt."""
    known = ("-v", "--verbose", "-q", "--quiet", "--log-format", "-h", "--help", "-V",
             "--version")  # fmt: skip
    unknown = [a for a in argv if a.startswith("-") and a.partition("=")[0] not in known]
    if unknown:
        return f"{unknown[0]} is not an option of {PROG}{closest(unknown[0], known)}"
    return "name a command"


def _with_closest_option(message: str, parser: argparse.ArgumentParser, argv: Sequence[str]) -> str:
    """argparse's "unrecognized arguments: --jsn" said of the command that was given, with the
    option of that command closest to the first one it does not know."""
    prefix = "unrecognized arguments: "
    if not message.startswith(prefix):
        return message
    words = [a for a in argv if not a.startswith("-")]
    names, current = [], parser
    for word in words:
        found = _subcommand(current, word)
        if found is None:
            break
        names.append(word)
        current = found
    options = [o for o in current._option_string_actions if o.startswith("--")]
    unknown = message.removeprefix(prefix).split()[0].partition("=")[0]
    said = f"{' '.join(names)}: {message}" if names else message
    return said + (closest(unknown, options) if unknown.startswith("-") else "")


def _subcommand(parser: argparse.ArgumentParser, word: str) -> argparse.ArgumentParser | None:
    """The parser of ``word``, a command (or table's action) of ``parser``; None if none."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and word in action.choices:
            found: argparse.ArgumentParser = action.choices[word]
            return found
    return None


def _known_command(argv: Sequence[str]) -> None:
    """A misspelt command is refused with the closest one (plgins: did you mean plugins?)."""
    word = _command_word(argv)
    if word is not None and word not in COMMANDS:
        hint = closest(word, list(COMMANDS))
        raise UsageError(f"{word!r} is not a command ({', '.join(COMMANDS)}){hint}")


def _ignored_options(args: argparse.Namespace, engine: Sequence[str] | None) -> list[str]:
    """Options that would otherwise be ignored in silence."""
    problems = []
    if args.command == "plan" and args.output is not None and not args.toml:
        problems.append("--output writes the run config of --toml; give --toml too")
    if args.command == "plan" and args.force and args.output is None:
        problems.append("--force lets --output replace a file; give --output too")
    if args.command in ("plan", "run") and args.integrated and args.device is None:
        problems.append("--integrated describes a card named with --device; give --device too")
    if args.command in ("plan", "run") and args.device is not None:
        given = [
            flag
            for flag, value in (("--gpu", args.gpu), ("--gpus", args.gpus),
                                ("--gpu-roles", args.gpu_roles),
                                ("--hip" if args.hip else "--no-hip", args.hip))
            if value is not None
        ]  # fmt: skip
        if given:
            problems.append(
                f"{given[0]} is about the cards of this PC; --device plans for a card that is "
                "not in it"
            )
    if args.command == "plan" and args.explain is not None and not args.explain.strip():
        problems.append("--explain needs a switch name, such as STRATA_HIP_WMMA or --pcie-frac")
    if args.command == "tune" and not args.switches:
        given = [
            flag
            for flag, value in (("--dry-run", args.dry_run), ("--budget", args.budget),
                                ("--config", args.config), ("--os", args.os),
                                ("--kv-streaming", args.kv_streaming))
            if value not in (None, False)
        ]  # fmt: skip
        if given:
            problems.append(f"{given[0]} is for tune --switches; give --switches too")
    if args.command == "tune" and args.switches:
        given = [
            flag
            for flag, value in (("--case", args.case), ("--tokens", args.tokens),
                                ("--output", args.output), ("--host", args.host or None),
                                ("--sysfs", args.sysfs))
            if value is not None
        ]  # fmt: skip
        if given:
            problems.append(f"{given[0]} is for a table calibration, not tune --switches")
    if args.command == "run" and engine is not None and args.json:
        problems.append("run --json reports the workload; with -- ENGINE the engine runs instead")
    return problems


def _fail(message: str, status: int, as_json: bool) -> int:
    """The one line of a command that cannot go on; with --json, a JSON answer on stdout too."""
    log.error(message)
    if as_json:
        from .answers import dumps, error_answer

        print(dumps(error_answer(message, status), indent=None))
    return status


def plan_request(
    args: argparse.Namespace,
    env: Mapping[str, str],
    recorder: Recorder | None,
    engine: Sequence[str] | None = None,
) -> PlanRequest:
    """The request of a `plan`, `run` or `devices` command line, read once."""
    from ..plan.detection import PlanRequest
    from ..plan.selection import DeviceChoice, parse_gpus, parse_roles

    choice = None
    if args.gpu is not None or args.gpus is not None or args.gpu_roles is not None:
        choice = DeviceChoice(
            gpu=args.gpu,
            gpus=parse_gpus(args.gpus) if args.gpus is not None else None,
            roles=parse_roles(args.gpu_roles) if args.gpu_roles is not None else {},
        )
    planning = args.command in ("plan", "run")
    if planning and (args.hipblaslt or args.rocblas):
        # checked here, so that a plan that needs no version refuses a bad one too
        from ..tuning.versions import hipblaslt_number, rocblas_version

        if args.hipblaslt:
            hipblaslt_number(args.hipblaslt)
        if args.rocblas:
            rocblas_version(args.rocblas)
    return PlanRequest(
        env=env,
        config=args.config,
        sysfs=args.sysfs,
        hip=args.hip,
        choice=choice,
        device=args.device if planning else None,
        integrated=planning and args.integrated,
        os=args.os if planning else None,
        kv=args.kv if planning else None,
        pack=args.pack if planning else None,
        vision=args.vision if planning else None,
        kv_streaming=planning and args.kv_streaming,
        ple_table_gib=args.ple_table_gib if planning else None,
        profile=args.profile if planning else None,
        hipblaslt=args.hipblaslt if planning else None,
        rocblas=args.rocblas if planning else None,
        engine_args=tuple(engine[1:]) if engine else (),
        threads=getattr(args, "threads", None) or 0,
        for_run=args.command == "run" and engine is None,
        recorder=recorder or Recorder(),
    )
