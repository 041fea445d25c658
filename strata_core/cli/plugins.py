"""`strata-core plugins`: the installed architecture plugins and their kernel libraries;
`--check` runs the conformance checks on each."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from .. import people
from ..answer_cache import Recorder
from ..api.manager import PluginManager, PluginStatus
from .answers import dumps, plugins_answer, plugins_check_answer
from .report import plugins_text, warn


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--json, and --check: hold each plugin against the hook contracts."""
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--check",
        action="store_true",
        help="hold each installed architecture plugin against every hook contract",
    )


def run(args: argparse.Namespace, env: Mapping[str, str], recorder: Recorder | None = None) -> int:
    """List the plugins and their kernel libraries, or check them (--check)."""
    manager = PluginManager.discover(env)
    if args.check:
        return check_plugins(args, manager)
    libraries = manager.kernel_libraries()
    records = list(manager.records.values())
    if args.json:
        print(dumps(plugins_answer(records, libraries, manager.problems)))
    else:
        warn(manager.problems)
        people.show(plugins_text(records, libraries, people.width()))
    return 0


def check_plugins(args: argparse.Namespace, manager: PluginManager) -> int:
    """Exit 1 when any installed architecture plugin breaks a contract or fails to load."""
    from ..testing.conformance import check_plugin

    found = {
        name: check_plugin(manager.pm.get_plugin(name), name)
        for name, record in manager.records.items()
        if not record.builtin and record.status is PluginStatus.ACTIVE
    }
    if args.json:
        print(dumps(plugins_check_answer(found, manager.problems)))
    else:
        warn(manager.problems)
        lines = []
        for name, problems in found.items():
            lines.append(
                f"{name}: "
                + ("conforms" if not problems else people.counted(len(problems), "problem"))
            )
            lines += [f"  {problem}" for problem in problems]
        people.show(people.lines_for(lines, people.width()))
    return 1 if any(found.values()) or manager.problems else 0
