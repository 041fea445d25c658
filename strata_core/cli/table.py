"""`strata-core table check`: validate tables, a folder's every table, as text or JSON."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from pathlib import Path

import attrs

from .. import people
from ..answer_cache import Recorder
from ..tuning.tables import Table, TableError, lookup_note, read
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


@attrs.frozen
class TableCheck:
    """A table checked: the table read, or None with the problems that refused it."""

    path: Path
    table: Table | None
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.table is not None


def tables_in(path: Path) -> Iterator[Path]:
    """The path itself, or a folder's ``*.txt`` files in name order."""
    if path.is_dir():
        yield from sorted(p for p in path.iterdir() if p.suffix == ".txt" and not p.is_dir())
    else:
        yield path


def check(path: Path) -> TableCheck:
    """The table at ``path`` read, or the problems that refused it."""
    try:
        return TableCheck(path, read(path))
    except TableError as error:
        return TableCheck(path, None, tuple(error.problems))


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
