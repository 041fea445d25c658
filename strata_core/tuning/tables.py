"""Tuning table formats: reading with line-numbered validation, and writing.

A table is whitespace-separated text (docs/tuning-tables.md):

- line 1: ``# strata-tuning columns=<names> min_gain=<x> [key=value ...]``;
- line 2: ``<MAGIC> <arch> <version>``, for example ``STRATA_HIPBLASLT_TUNING_V1 gfx1151 100401``;
- from line 3: one row per shape, in the kind's columns.

A table with any error is refused whole: :func:`read` raises :class:`TableError` with every
problem as ``path:line: what``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from ..answer_cache import Recorder
from ..bounded import TUNING_TABLE
from ..digits import is_digits
from .kinds import HOST, KINDS, OP_PATTERN, ROCBLAS, Kind

DEFAULT = "default"
MIN_GAIN = 1.05
DTYPES = ("bf16", "f16", "f32")

#: rocBLAS rows come in token buckets T = 256 ... 8192 (AMD_HIP.md, "rocBLAS table").
ROCBLAS_T_RANGE = (256, 8192)


@attrs.frozen
class Row:
    key: tuple[Any, ...]
    solution: str
    default_us: float
    best_us: float
    line: int

    @property
    def tuned(self) -> bool:
        return self.solution != DEFAULT


@attrs.frozen
class Table:
    kind: Kind
    arch: str
    version: str
    rows: tuple[Row, ...]
    min_gain: float = MIN_GAIN
    meta: dict[str, str] = attrs.field(factory=dict)
    path: Path | None = None

    @property
    def tuned_rows(self) -> int:
        """How many rows name a winner."""
        return sum(row.tuned for row in self.rows)

    def solutions(self) -> dict[tuple[Any, ...], str]:
        """Shape key -> solution, for the rows that name a winner."""
        return {row.key: row.solution for row in self.rows if row.tuned}


class TableError(Exception):
    """A refused table; ``problems`` are ``path:line: what`` lines."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__(problems[0] if len(problems) == 1 else f"{len(problems)} problems")
        self.problems = tuple(problems)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def _parse_header(path: Path, lines: list[str], problems: list[str]) -> Any:
    if len(lines) < 2:
        problems.append(
            f"{path}:{len(lines) or 1}: a table needs a comment line and an "
            "identity line before its rows"
        )
        return None
    first = lines[0].split()
    meta = dict(token.split("=", 1) for token in first[2:] if "=" in token)
    if first[:2] != ["#", "strata-tuning"]:
        problems.append(f"{path}:1: expected '# strata-tuning columns=...', got {lines[0]!r}")
    identity = lines[1].split()
    kind = KINDS.get(identity[0]) if identity else None
    if kind is None or len(identity) != 3:
        problems.append(
            f"{path}:2: expected '<{'|'.join(KINDS)}> <arch> <version>', got {lines[1]!r}"
        )
        return None
    _, arch, version = identity
    if not re.fullmatch(kind.arch_pattern, arch):
        problems.append(f"{path}:2: {arch!r} is not an architecture name")
    if not re.fullmatch(kind.version_pattern, version):
        problems.append(f"{path}:2: {version!r} is not a {kind.library} version")
    columns = meta.get("columns")
    if columns != ",".join(kind.columns):
        got = "the header names none" if columns is None else f"got {columns}"
        problems.append(f"{path}:1: columns must be {','.join(kind.columns)}; {got}")
    min_gain = _number(meta.get("min_gain", str(MIN_GAIN)))
    if min_gain is None or min_gain < 1:
        problems.append(
            f"{path}:1: min_gain must be a number of at least 1, got {meta.get('min_gain')!r}"
        )
        min_gain = MIN_GAIN
    return kind, arch, version, min_gain, meta


def _parse_row(
    kind: Kind, fields: list[str], line: int, min_gain: float, path: Path, problems: list[str]
) -> Row | None:
    where = f"{path}:{line}"
    if len(fields) != len(kind.columns):
        problems.append(
            f"{where}: expected {len(kind.columns)} columns "
            f"({' '.join(kind.columns)}), got {len(fields)}"
        )
        return None
    values = dict(zip(kind.columns, fields, strict=True))
    bad = len(problems)
    key: list[str | int] = []
    for column in kind.key:
        text = values[column]
        if column == "dtype":
            if text not in DTYPES:
                problems.append(f"{where}: dtype must be one of {', '.join(DTYPES)}, got {text!r}")
            key.append(text)
        elif column == "op":
            if not re.fullmatch(OP_PATTERN, text):
                problems.append(f"{where}: op must be a lower-case name, got {text!r}")
            key.append(text)
        elif not is_digits(text) or int(text) == 0:
            problems.append(f"{where}: {column} must be a positive integer, got {text!r}")
            key.append(text)
        else:
            key.append(int(text))
    solution = values["solution"]
    if solution != DEFAULT and not re.fullmatch(kind.solution_pattern, solution):
        what = "a solution name" if kind is HOST else f"a {kind.library} solution"
        problems.append(f"{where}: solution must be {what} or '{DEFAULT}', got {solution!r}")
    default_us, best_us = _number(values["default_us"]), _number(values["best_us"])
    for column, number in (("default_us", default_us), ("best_us", best_us)):
        if number is None:
            problems.append(
                f"{where}: {column} must be a positive time in microseconds, got {values[column]!r}"
            )
    if default_us is not None and best_us is not None:
        gain = default_us / best_us
        if solution != DEFAULT and gain < min_gain:
            problems.append(
                f"{where}: solution {solution} gains {gain:.3f}x over the default, "
                f"less than min_gain {min_gain}; the row must say '{DEFAULT}'"
            )
        if solution == DEFAULT and gain >= min_gain:
            problems.append(
                f"{where}: '{DEFAULT}' with a best time {gain:.3f}x faster than the "
                "default names no winner"
            )
    if len(problems) > bad or default_us is None or best_us is None:
        return None
    return Row(tuple(key), solution, default_us, best_us, line)


def read(path: Path, recorder: Recorder | None = None) -> Table:
    """Read and validate a table; any problem refuses it whole."""
    try:
        text = (recorder or Recorder()).read_text(path, TUNING_TABLE)
    except UnicodeDecodeError as exc:
        raise TableError([f"{path}:1: not UTF-8 text (byte {exc.start}); not a table"]) from None
    except OSError as exc:
        raise TableError([f"{path}:1: cannot read: {exc.strerror or exc}"]) from None
    return parse(text, path)


def parse(text: str, path: Path) -> Table:
    lines = text.splitlines()
    problems: list[str] = []
    header = _parse_header(path, lines, problems)
    if header is None:
        raise TableError(problems)
    kind, arch, version, min_gain, meta = header
    rows: list[Row] = []
    seen: dict[tuple[Any, ...], int] = {}
    for number, line in enumerate(lines[2:], 3):
        fields = line.split()
        if not fields:
            problems.append(f"{path}:{number}: empty line among the rows")
            continue
        row = _parse_row(kind, fields, number, min_gain, path, problems)
        if row is None:
            continue
        if row.key in seen:
            problems.append(f"{path}:{number}: the same shape as line {seen[row.key]}")
            continue
        seen[row.key] = number
        rows.append(row)
    if not rows and not problems:
        problems.append(f"{path}:{len(lines)}: no rows")
    if kind is ROCBLAS:
        problems += _rocblas_buckets(path, rows)
    if kind is HOST:
        problems += _host_threads(path, meta)
    if problems:
        raise TableError(problems)
    return Table(kind, arch, version, tuple(rows), min_gain, meta, path)


#: the OpenMP wait policies a host table may record (OMP_WAIT_POLICY)
WAIT_POLICIES = ("active", "passive")


def _host_threads(path: Path, meta: dict[str, str]) -> list[str]:
    """A host table's ``threads=N`` and ``omp_wait_policy=...``, where it records them."""
    problems = []
    threads = meta.get("threads")
    if threads is not None and not (is_digits(threads) and int(threads) > 0):
        problems.append(f"{path}:1: threads must be a whole number from 1, got {threads!r}")
    policy = meta.get("omp_wait_policy")
    if policy is not None and policy not in WAIT_POLICIES:
        problems.append(
            f"{path}:1: omp_wait_policy must be {' or '.join(WAIT_POLICIES)}, got {policy!r}"
        )
    if policy is not None and threads is None:
        problems.append(f"{path}:1: omp_wait_policy without threads")
    return problems


def _rocblas_buckets(path: Path, rows: list[Row]) -> list[str]:
    low, high = ROCBLAS_T_RANGE
    problems = [
        f"{path}:{r.line}: T {r.key[0]} is outside the token buckets {low} ... {high}"
        for r in rows
        if not low <= r.key[0] <= high
    ]
    buckets = sorted({r.key[0] for r in rows})
    shapes: dict[tuple[Any, ...], set[int]] = {}
    first_line: dict[tuple[Any, ...], int] = {}
    for r in rows:
        shapes.setdefault(r.key[1:], set()).add(r.key[0])
        first_line.setdefault(r.key[1:], r.line)
    for shape, have in shapes.items():
        missing = [t for t in buckets if t not in have]
        if missing:
            n, k, ldy = shape
            problems.append(
                f"{path}:{first_line[shape]}: shape N={n} K={k} ldy={ldy} has no "
                f"row for T {', '.join(map(str, missing))}"
            )
    return problems


def lookup_note(path: Path, table: Table) -> str:
    """How the engine takes a table whose name is not the one the folder lookup wants."""
    name = table.kind.file_name(table.arch, table.version)
    if path.name == name:
        return ""
    forced = f", {table.kind.variable} under any name" if table.kind.variable else ""
    return f"; the folder lookup takes it only as {name}{forced}"


def render(table: Table) -> str:
    """The text of a table, rows in their given order."""
    meta = {"columns": ",".join(table.kind.columns), "min_gain": f"{table.min_gain:g}"}
    meta |= {k: v for k, v in table.meta.items() if k not in meta}
    lines = [
        "# strata-tuning " + " ".join(f"{k}={v}" for k, v in meta.items()),
        f"{table.kind.magic} {table.arch} {table.version}",
    ]
    for row in table.rows:
        outcome = {
            "solution": row.solution,
            "default_us": f"{row.default_us:.2f}",
            "best_us": f"{row.best_us:.2f}",
        }
        cells = dict(zip(table.kind.key, map(str, row.key), strict=True)) | outcome
        lines.append(" ".join(cells[c] for c in table.kind.columns))
    return "\n".join(lines) + "\n"
