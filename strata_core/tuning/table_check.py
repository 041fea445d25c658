"""A tuning table checked by the lookup's rules (`strata-core table check`): read, or refused
with every problem found."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs

from .tables import Table, TableError, read


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
