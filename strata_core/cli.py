"""The `strata-core` command. User errors end with one line and exit status 2."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import __version__
from .errors import StrataError

PROG = "strata-core"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Which AMD GPU backend of the Strata engine runs on this PC.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    plugins = commands.add_parser("plugins", help="list the architecture plugins")
    plugins.add_argument("--json", action="store_true", help="print JSON")

    devices = commands.add_parser("devices", help="list the AMD GPUs and who runs each")
    devices.add_argument("--json", action="store_true", help="print JSON")
    devices.add_argument("--sysfs", metavar="DIR", type=Path,
                         help="sysfs root to read (default: $STRATA_SYSFS or /sys)")
    probe = devices.add_mutually_exclusive_group()
    probe.add_argument("--hip", dest="hip", action="store_true", default=None,
                       help="ask the HIP runtime too (default: only when reading /sys)")
    probe.add_argument("--no-hip", dest="hip", action="store_false")
    choice = devices.add_mutually_exclusive_group()
    choice.add_argument("--gpu", type=int, metavar="N", help="use HIP device N")
    choice.add_argument("--gpus", metavar="LIST", help="use these HIP devices (1,0 or all)")
    choice.add_argument("--gpu-roles", metavar="ROLES", help="say the roles: 1=main,0=helper")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    env = dict(os.environ)
    try:
        if args.command == "plugins":
            return _plugins(args, env)
        return _devices(args, env)
    except StrataError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        if env.get("STRATA_DEBUG"):
            raise
        print(f"{PROG}: internal error: {type(exc).__name__}: {exc} "
              "(STRATA_DEBUG=1 shows where)", file=sys.stderr)
        return 1


def _warn(lines: Sequence[str]) -> None:
    for line in lines:
        print(f"{PROG}: {line}", file=sys.stderr)


def _plugins(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from .manager import PluginManager
    from .report import plugin_dict, plugins_text

    manager = PluginManager.discover(env)
    records = list(manager.records.values())
    if args.json:
        print(json.dumps({"plugins": [plugin_dict(r) for r in records],
                          "problems": manager.problems}, indent=2))
    else:
        _warn(manager.problems)
        print(plugins_text(records))
    return 0


def detection_context(sysfs: Path | None, hip: bool | None, env: Mapping[str, str]):
    """The detection context for the command line's options and the environment."""
    from .records import DetectionContext

    root = sysfs or Path(env.get("STRATA_SYSFS") or "/sys")
    if hip is None:
        hip = root == Path("/sys") and env.get("STRATA_HIP_PROBE", "1") != "0"
    raw_timeout = env.get("STRATA_HIP_PROBE_TIMEOUT", "15")
    try:
        timeout = float(raw_timeout)
    except ValueError:
        raise StrataError(f"STRATA_HIP_PROBE_TIMEOUT={raw_timeout}: expected seconds") from None
    if sysfs is not None and not sysfs.is_dir():
        raise StrataError(f"--sysfs {sysfs}: no such directory")
    return DetectionContext(sysfs=root, env=dict(env), hip_probe=hip, hip_timeout_s=timeout)


def _devices(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from .claims import assign
    from .devices import scan
    from .manager import PluginManager
    from .report import device_dict, devices_text
    from .selection import DeviceChoice, choose, parse_gpus, parse_roles

    choice = DeviceChoice(
        gpu=args.gpu,
        gpus=parse_gpus(args.gpus) if args.gpus else None,
        roles=parse_roles(args.gpu_roles) if args.gpu_roles else {},
    )
    context = detection_context(args.sysfs, args.hip, env)
    manager = PluginManager.discover(env)
    found = scan(manager, context)
    assignments, problems = assign(manager, found.devices, env.get("STRATA_ARCH_PLUGIN"))
    selection = choose(assignments, choice)
    rows = [device_dict(a, selection) for a in assignments]
    warnings = [*manager.problems, *found.problems, *problems]
    if args.json:
        print(json.dumps({"devices": rows, "selected": list(selection.indices),
                          "selection_reason": selection.reason,
                          "notes": [*found.notes, *selection.notes],
                          "warnings": warnings}, indent=2))
    else:
        _warn(warnings)
        for note in (*found.notes, *selection.notes):
            print(f"note: {note}")
        print(devices_text(rows, selection))
    return 0
