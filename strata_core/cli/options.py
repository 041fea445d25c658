"""The options several commands share, and the types of their values: -v, -q and --log-format
(before the command and after it), the sysfs root, what `devices` and `env` scan, the cards
of this PC (--hip, --gpu, --gpus, --gpu-roles) and what `plan` and `run` plan for."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from .. import log
from ..api.vocabulary import KV_TYPES, OS_NAMES, PACKS, READERS
from ..digits import is_digits
from ..errors import StrataError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on a command's path
if TYPE_CHECKING:
    from typing import Any


def logging_options(parser: argparse.ArgumentParser, default: Any) -> None:
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


def positive_int(text: str) -> int:
    """A whole number from 1."""
    value = int(text) if is_digits(text.strip().lstrip("+")) else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1, got {text!r}")
    return value


def gib(text: str) -> float:
    """A finite number of GiB from 0."""
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


def sysfs_path(text: str) -> Path:
    """A sysfs root, or ``example:NAME``, one of the example machines strata ships."""
    from ..detect.examples import PREFIX, example_name

    if text.startswith(PREFIX):
        try:
            example_name(text)
        except StrataError as unknown:
            raise argparse.ArgumentTypeError(str(unknown)) from None
    return Path(text)


def sysfs_option(parser: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup) -> None:
    """--sysfs: the sysfs root to read, or an example machine."""
    from ..detect.examples import listing

    parser.add_argument(
        "--sysfs",
        metavar="DIR",
        type=sysfs_path,
        help="sysfs root to read (default: $STRATA_SYSFS or /sys), or example:NAME, a machine "
        f"strata ships: {listing()}",
    )


def scan_options(parser: argparse.ArgumentParser, config_help: str) -> None:
    """What `devices` and `env` take: --json, the sysfs root, the run config, the cards."""
    parser.add_argument("--json", action="store_true", help="print JSON")
    sysfs_option(parser)
    parser.add_argument("--config", metavar="FILE", type=Path, help=config_help)
    detection_options(parser)


def planning_options(parser: argparse.ArgumentParser) -> None:
    """What `plan` and `run` plan for: a card named with --device or this PC's (--sysfs), the
    OS, the model and its KV cache, the versions of the GEMM libraries, the run config."""
    from ..plan import profile

    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--device",
        metavar="GFX",
        type=target_name,
        help="plan for a card that is not in this PC",
    )
    sysfs_option(target)
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


def detection_options(parser: argparse.ArgumentParser) -> None:
    """Which cards of this PC: whether the HIP runtime is asked, and --gpu, --gpus or
    --gpu-roles."""
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


def ignored_planning_options(args: argparse.Namespace) -> list[str]:
    """The planning options of `plan` and `run` that would be ignored in silence: a card's
    kind without the card, or this PC's cards beside a card that is not in it."""
    problems = []
    if args.integrated and args.device is None:
        problems.append("--integrated describes a card named with --device; give --device too")
    if args.device is not None:
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
    return problems
