"""Keys as TOML spells them: the key a line of a TOML file sets or opens (``"A=B" = "1"``,
``[tuning]``), read as tomllib reads it, and a key path spelled back for a message
(``env."LD_PRELOAD=/x.so:A"``)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence

#: a bare key, a basic (quoted) key or a literal key; dotted keys join them with dots
_KEY = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"""
_KEYS = rf"{_KEY}(?:[ \t]*\.[ \t]*{_KEY})*"
#: ``KEYS =`` at the start of a line: the key of an assignment
ASSIGNED = re.compile(rf"[ \t]*({_KEYS})[ \t]*=")
#: ``[KEYS]`` or ``[[KEYS]]`` at the start of a line: the table a header opens
HEADER = re.compile(rf"[ \t]*\[\[?[ \t]*({_KEYS})[ \t]*\]")
BARE = re.compile(r"[A-Za-z0-9_-]+")
_BARE_KEYS = re.compile(r"[A-Za-z0-9_-]+(?:[ \t]*\.[ \t]*[A-Za-z0-9_-]+)*")


def key_path(spelled: str) -> list[str] | None:
    """The keys a dotted key spells (``a."b.c"``: a, b.c), as tomllib reads them; None where
    it spells no key."""
    if _BARE_KEYS.fullmatch(spelled):
        return [key.strip(" \t") for key in spelled.split(".")]
    try:
        value: object = tomllib.loads(f"{spelled} = 0")
    except tomllib.TOMLDecodeError:
        return None
    keys = []
    while isinstance(value, dict):
        ((key, value),) = value.items()
        keys.append(key)
    return keys


def line_keys(line: str) -> tuple[bool, list[str]] | None:
    """What a line of TOML names: (True, the table) for a header, (False, the keys) for an
    assignment (relative to the table above it); None for any other line."""
    for is_header, pattern in ((True, HEADER), (False, ASSIGNED)):
        match = pattern.match(line)
        keys = key_path(match.group(1)) if match else None
        if keys is not None:
            return is_header, keys
    return None


def spelled(keys: Sequence[str]) -> str:
    """A key path as a message shows it: bare keys as they are, any other quoted as TOML
    quotes it, with a control character as its escape (``env."A\\u0000B"``)."""
    return ".".join(key if BARE.fullmatch(key) else quoted(key) for key in keys)


def quoted(key: str) -> str:
    """``key`` as a TOML basic string (and a JSON string) spells it."""

    def escaped(char: str) -> str:
        if char in '"\\':
            return f"\\{char}"
        if char.isprintable():
            return char
        return f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}"

    return '"' + "".join(escaped(char) for char in key) + '"'
