"""`strata-core table check`: validate tables, a folder's every table, as text or JSON."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..tuning.tables import Table, TableError, read

#: what a JSON answer says of a table, null where the table is refused
FACTS = ("library", "arch", "version", "rows", "tuned", "lookup_name", "forced_by")


def tables_in(path: Path) -> Iterator[Path]:
    """The path itself, or a folder's ``*.txt`` files in name order."""
    if path.is_dir():
        yield from sorted(p for p in path.iterdir() if p.suffix == ".txt" and not p.is_dir())
    else:
        yield path


def lookup_note(path: Path, table: Table) -> str:
    """How the engine takes a table whose name is not the one the folder lookup wants."""
    name = table.kind.file_name(table.arch, table.version)
    if path.name == name:
        return ""
    forced = f", {table.kind.variable} under any name" if table.kind.variable else ""
    return f"; the folder lookup takes it only as {name}{forced}"


def check(path: Path) -> dict[str, Any]:
    try:
        table = read(path)
    except TableError as error:
        problems = list(error.problems)
        return {"path": str(path), "ok": False} | dict.fromkeys(FACTS) | {"problems": problems}
    return {
        "path": str(path),
        "ok": True,
        "library": table.kind.library,
        "arch": table.arch,
        "version": table.version,
        "rows": len(table.rows),
        "tuned": sum(row.tuned for row in table.rows),
        "lookup_name": table.kind.file_name(table.arch, table.version),
        "forced_by": table.kind.variable,
        "problems": [],
        "note": lookup_note(path, table),
    }


def run_table_check(args: argparse.Namespace) -> int:
    from .answers import dumps, table_check_answer

    results, empty = [], []
    for given in args.files:
        found = [check(path) for path in tables_in(given)]
        if not found:
            empty.append(f"{given}: no tables (*.txt) in this folder")
        results += found
    ok = not empty and all(r["ok"] for r in results)
    if args.json:
        tables = [{k: v for k, v in r.items() if k != "note"} for r in results]
        print(dumps(table_check_answer(ok, tables, empty)))
        return 0 if ok else 1
    for r in results:
        if not r["ok"]:
            print("\n".join(r["problems"]))
            continue
        print(
            f"{r['path']}: ok: {r['library']} table for {r['arch']}, version {r['version']}, "
            f"{r['rows']} rows ({r['tuned']} tuned){r['note']}"
        )
    for line in empty:
        print(line)
    return 0 if ok else 1
