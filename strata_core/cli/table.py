"""`strata-core table check`: validate tables, a folder's every table, as text or JSON."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from .. import people
from ..answer_cache import Recorder
from ..tuning.table_check import check, tables_in
from ..tuning.tables import lookup_note
from .options import logging_options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Its one action, check: the tables to check, and --json."""
    actions = parser.add_subparsers(dest="table_command", required=True, metavar="ACTION")
    check = actions.add_parser(
        "check",
        help="validate tables (each FILE, or every *.txt in a folder); exit 1 if any is refused",
        description="Validate tuning tables by the lookup's rules; every problem is "
        "path:line: what.",
        epilog=parser.epilog,
    )
    logging_options(check, argparse.SUPPRESS)
    check.add_argument("files", nargs="+", type=Path, metavar="FILE")
    check.add_argument("--json", action="store_true", help="answer in JSON")


def run(args: argparse.Namespace, env: Mapping[str, str], recorder: Recorder | None = None) -> int:
    """Check each table (or folder of tables) named: exit 1 where any is refused."""
    from .answers import dumps, table_check_answer

    checks, empty = [], []
    for given in args.files:
        found = [check(path) for path in tables_in(given)]
        if not found:
            empty.append(f"{given}: no tables (*.txt) in this folder")
        checks += found
    ok = not empty and all(c.ok for c in checks)
    if args.json:
        print(dumps(table_check_answer(ok, checks, empty)))
        return 0 if ok else 1
    lines: list[str] = []
    for c in checks:
        if c.table is None:
            lines += c.problems
            continue
        table = c.table
        rows = people.counted(len(table.rows), "row")
        lines.append(
            f"{c.path}: ok: {table.kind.library} table for {table.arch}, version "
            f"{table.version}, {rows} ({table.tuned_rows} tuned){lookup_note(c.path, table)}"
        )
    people.show(people.lines_for([*lines, *empty], people.width()))
    return 0 if ok else 1
