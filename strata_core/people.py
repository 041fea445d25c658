"""Text for people: control characters escaped, lines wrapped to the terminal's width, tables
that fit in it, times in the unit a person reads and counts with their nouns agreeing.

The width is $COLUMNS where it is set, else the terminal's where the stream is one; a pipe or
a file gets whole lines (None: nothing is wrapped), and a table never grows past
:data:`TABLE_COLUMNS`. Light on imports: textwrap is imported only where a line is too long,
and the answer cache reads :func:`widths` for its key."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on the cache's path
if TYPE_CHECKING:
    from collections.abc import Collection, Sequence
    from typing import TextIO

#: the most columns a table takes, whatever the terminal's width
TABLE_COLUMNS = 100
#: how far a reason put on its own line is indented past its label
REASON_INDENT = 4


def one_line(text: str) -> str:
    """``text`` with each control character (a line break, an escape sequence's ESC, a
    direction override) written as Python writes it in a string: what a driver, sysfs or a
    file says cannot break a line or forge one."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def width(stream: TextIO | None = None) -> int | None:
    """The columns lines for people are wrapped to on ``stream`` (the process's own standard
    output by default, whatever redirection is in force): $COLUMNS, else the terminal's, else
    None for a pipe or a file."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = stream or sys.__stdout__
    try:
        if stream is not None and stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns or None
    except (OSError, ValueError):
        pass
    return None


def widths() -> tuple[int | None, int | None]:
    """The widths of standard output and standard error (an answer drawn for one terminal is
    not given again to another)."""
    return width(sys.__stdout__), width(sys.__stderr__)


def wrapped(line: str, columns: int | None, indent: str | None = None) -> list[str]:
    """``line`` escaped (:func:`one_line`) and broken at spaces into lines of at most
    ``columns`` (a word longer than that keeps its own line whole); each later line starts
    with ``indent``, by default the line's own indent and :data:`REASON_INDENT` more."""
    line = one_line(line)
    if columns is None or len(line) <= columns:
        return [line]
    import re
    import textwrap

    text = line.lstrip(" ")
    own = line[: len(line) - len(text)]
    # a number keeps its unit on its line: the space between them is held while wrapping
    held = re.sub(r"(?<=\d) (?=(?:s|ms|us|GiB|GB|GB/s|K|M|G)\b)", "\0", text)
    parts = textwrap.wrap(
        held,
        columns,
        initial_indent=own,
        subsequent_indent=own + " " * REASON_INDENT if indent is None else indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [part.replace("\0", " ") for part in parts] or [line]


def lines_for(text_lines: Sequence[str], columns: int | None) -> list[str]:
    """Every line of ``text_lines`` wrapped (:func:`wrapped`)."""
    return [part for line in text_lines for part in wrapped(line, columns)]


def show(text_lines: Sequence[str]) -> None:
    """Print lines for people (each already fitted to :func:`width`) on standard output,
    escaped."""
    print("\n".join(one_line(line) for line in text_lines))


def entry(label: str, reason: str, column: int, columns: int | None) -> list[str]:
    """A label and its reason: on one line with the reason at ``column`` where it fits in
    ``columns``, else the reason on its own lines, indented past the label."""
    label, reason = one_line(label), one_line(reason)
    line = f"{label.ljust(column)}{reason}" if len(label) < column else f"{label}  {reason}"
    if columns is None or len(line) <= columns:
        return [line]
    indent = " " * (len(label) - len(label.lstrip(" ")) + REASON_INDENT)
    return [label.rstrip(), *wrapped(indent + reason, columns, indent)]


def table(
    rows: Sequence[Sequence[str]],
    right: Collection[int] = (),
    flexible: int | None = None,
    columns: int | None = None,
) -> list[str]:
    """``rows`` (the first is the header) under aligned columns (:func:`table_rows`)."""
    return [line for group in table_rows(rows, right, flexible, columns) for line in group]


def table_rows(
    rows: Sequence[Sequence[str]],
    right: Collection[int] = (),
    flexible: int | None = None,
    columns: int | None = None,
) -> list[list[str]]:
    """The lines of each of ``rows`` (the first is the header) under aligned columns two
    spaces apart, each cell escaped, the columns in ``right`` aligned right. Where the table
    would be wider than ``columns`` (at most :data:`TABLE_COLUMNS`), the ``flexible`` column's
    cells are wrapped onto the lines below their row."""
    limit = min(columns or TABLE_COLUMNS, TABLE_COLUMNS)
    cells = [[one_line(cell) for cell in row] for row in rows]
    sizes = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    over = sum(sizes) + 2 * (len(sizes) - 1) - limit
    parts = [[[cell] for cell in row] for row in cells]
    if over > 0 and flexible is not None:
        import textwrap

        longest_word = max(len(word) for row in cells for word in row[flexible].split() or [""])
        sizes[flexible] = max(sizes[flexible] - over, longest_word, len(cells[0][flexible]))
        for row in parts:
            row[flexible] = textwrap.wrap(
                row[flexible][0], sizes[flexible], break_long_words=False, break_on_hyphens=False
            ) or [""]
    groups = []
    for row in parts:
        lines = []
        for n in range(max(len(cell) for cell in row)):
            shown = [cell[n] if n < len(cell) else "" for cell in row]
            lines.append(
                "  ".join(
                    text.rjust(size) if i in right else text.ljust(size)
                    for i, (text, size) in enumerate(zip(shown, sizes, strict=True))
                ).rstrip()
            )
        groups.append(lines)
    return groups


#: the units of a time, largest first, with the seconds each is worth
_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"))


def duration(seconds: float) -> str:
    """A time in the unit a person reads, with three significant figures: 1.31 s, 68.2 ms,
    412 us, 0.250 us (and 0 s)."""
    if seconds == 0:
        return "0 s"
    scale, unit = next(((s, u) for s, u in _TIME_UNITS if abs(seconds) >= s), _TIME_UNITS[-1])
    value = seconds / scale
    digits = 3 if abs(value) < 1 else 2 if abs(value) < 10 else 1 if abs(value) < 100 else 0
    return f"{value:.{digits}f} {unit}"


#: decimal byte units, largest first, with the bytes each is worth
_SIZE_UNITS = ((1e9, "GB"), (1e6, "MB"), (1e3, "KB"))


def decimal_size(nbytes: float) -> str:
    """A size in the decimal unit a rate in GB/s reads beside: 7.43 GB, 17.8 MB, 512 B."""
    for scale, unit in _SIZE_UNITS:
        if nbytes >= scale:
            value = nbytes / scale
            return f"{value:.{2 if value < 10 else 1 if value < 100 else 0}f} {unit}"
    return f"{nbytes:.0f} B"


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """``1 thread``, ``2 threads``: a count with its noun agreeing (``plural`` where it is
    not the noun and an s)."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
