"""`strata-core table check`: validate tables, a folder's every table, as text or JSON."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import attrs

from .. import people
from ..tuning.tables import Table, TableError, lookup_note, read


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
    try:
        return TableCheck(path, read(path))
    except TableError as error:
        return TableCheck(path, None, tuple(error.problems))


def run_table_check(args: argparse.Namespace) -> int:
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
