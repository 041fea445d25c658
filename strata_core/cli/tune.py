"""`strata-core tune`: calibrate a card's or the host backend's GEMMs and write a table
(cli/tune_table.py), or measure the calibratable switches (--switches: cli/tune_switches.py)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from ..answer_cache import Recorder
from ..api.vocabulary import OS_NAMES
from .options import sysfs_option


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """A table calibration's options, and those of --switches."""
    from ..plan import profile

    parser.add_argument(
        "--output",
        metavar="FILE",
        help="table to write, or its folder (one that exists, or ends in /) (default: "
        "$STRATA_TUNING_DIR or ~/.local/share/strata/tuning), named for the card or CPU and "
        "the library",
    )
    parser.add_argument(
        "--tokens",
        metavar="LIST",
        help="token buckets (default: 256,...,8192 on a card, 256,512,1024,2048 on the host)",
    )
    parser.add_argument(
        "--host", action="store_true", help="calibrate the host backend even where a card runs"
    )
    sysfs_option(parser)
    parser.add_argument(
        "--case",
        action="append",
        metavar="T,op,N,K,dtype",
        help="measure this case only (repeatable)",
    )
    parser.add_argument("--repeats", type=int, default=7, help="alternating rounds per case")
    parser.add_argument(
        "--switches",
        action="store_true",
        help="measure the calibratable switches in on/off pairs; write winners that repeat "
        "into the run config's env",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        type=Path,
        help="with --switches: the run config to write (default: ./strata.toml)",
    )
    parser.add_argument(
        "--profile",
        metavar="NAME|FILE",
        type=profile.named,
        help="model profile of the shapes to measure (with --switches, or on a card): "
        f"{', '.join(profile.SHIPPED)} or a file (default: {profile.DEFAULT_NAME})",
    )
    parser.add_argument("--os", choices=OS_NAMES, help="with --switches: the OS the run is for")
    parser.add_argument(
        "--kv-streaming", action="store_true", help="with --switches: the run streams the KV cache"
    )
    parser.add_argument(
        "--min-gain",
        type=float,
        help="how much faster than the default a winner must be (default: 1.05 for a table, "
        "1.03 for --switches)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        metavar="SECONDS",
        help="with --switches: the longest a switch is measured (default 10)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="with --switches: show the change to the run config as a diff; write nothing",
    )


def ignored_options(args: argparse.Namespace) -> list[str]:
    """Options that would otherwise be ignored in silence: those of --switches without it,
    and those of a table calibration with it."""
    problems = []
    if not args.switches:
        given = [
            flag
            for flag, value in (("--dry-run", args.dry_run), ("--budget", args.budget),
                                ("--config", args.config), ("--os", args.os),
                                ("--kv-streaming", args.kv_streaming))
            if value not in (None, False)
        ]  # fmt: skip
        if given:
            problems.append(f"{given[0]} is for tune --switches; give --switches too")
    if args.switches:
        given = [
            flag
            for flag, value in (("--case", args.case), ("--tokens", args.tokens),
                                ("--output", args.output), ("--host", args.host or None),
                                ("--sysfs", args.sysfs))
            if value is not None
        ]  # fmt: skip
        if given:
            problems.append(f"{given[0]} is for a table calibration, not tune --switches")
    return problems


def run(args: argparse.Namespace, env: Mapping[str, str], recorder: Recorder | None = None) -> int:
    """Calibrate and write a table, or with --switches measure the switches."""
    if args.switches:
        from .tune_switches import run_switch_trials

        return run_switch_trials(args, env)
    from .tune_table import calibrate_table

    return calibrate_table(args, env)
