"""What exec can carry from a run config to the engine, checked before anything runs: a
variable's name as POSIX allows it (not empty, no ``=``), and names, values, the program and
its arguments as C strings (no NUL; text UTF-8 can write; within the most Linux passes in one
string). Each check gives why a string is refused, or None."""

from __future__ import annotations

#: Linux's MAX_ARG_STRLEN: the most bytes one argument or one NAME=value takes, its NUL included
MAX_STRING_BYTES = 32 * 4096


def variable_problem(name: str, value: str) -> str | None:
    """Why ``name=value`` cannot be put in the engine's environment, or None."""
    if not name:
        return "a variable's name cannot be empty"
    if "=" in name:
        return (
            "a variable's name cannot hold '=' (the engine would read the name up to it, "
            "and the rest as the value)"
        )
    for part, text in (("name", name), ("value", value)):
        problem = _c_string_problem(text)
        if problem is not None:
            return f"the {part} {problem}"
    return _size_problem(f"{name}={value}", "a variable, with its name")


def program_problem(exe: str) -> str | None:
    """Why ``exe`` cannot name the program to start, or None."""
    if not exe:
        return "empty; name the engine's program"
    return _c_string_problem(exe) or _size_problem(exe, "a program's name")


def argument_problem(arg: str) -> str | None:
    """Why ``arg`` cannot be one of the engine's arguments, or None."""
    return _c_string_problem(arg) or _size_problem(arg, "an argument")


def _c_string_problem(text: str) -> str | None:
    if "\0" in text:
        return "holds a NUL character, which ends a string where exec reads it"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return f"holds {text[error.start]!r}, which is no character UTF-8 can write"
    return None


def _size_problem(text: str, what: str) -> str | None:
    size = len(text.encode("utf-8")) + 1
    if size > MAX_STRING_BYTES:
        return f"{size:,} bytes; Linux passes at most {MAX_STRING_BYTES:,} in {what}"
    return None
