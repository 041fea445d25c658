"""A TOML or JSON document that a user gives strata (a run config, a model profile), bounded
before a parser reads it: at most MAX_BYTES, its arrays and tables nested at most MAX_DEPTH
levels deep. The parsers recurse once a level (tomllib in Python, json in C), so a deeper
document would end in a RecursionError; its depth is found first, from its brackets outside
strings and comments. Each refusal is one StrataError naming the file and why, and for a
document nested too deeply the line and the key."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from ..errors import StrataError
from .toml_keys import line_keys, spelled

#: the most a run config or a profile may hold (strata's part of either is a few hundred bytes)
MAX_BYTES = 1 << 20
#: the deepest its arrays and tables may lie within one another (strata's keys need 3)
MAX_DEPTH = 32

#: what a TOML document's nesting is read from: its strings and comments (brackets in them
#: nest nothing) and its brackets; a string left open runs to the end of its line (or of
#: the text, for a multi-line one), where the parser stops too
_TOML_TOKENS = re.compile(
    r"""
    (?P<string>
        \"\"\"(?:[^"\\]|\\.|"{1,2}(?!"))*(?:"{3,5}|\Z)
      | '''(?:[^']|'{1,2}(?!'))*(?:'{3,5}|\Z)
      | "(?:[^"\\\n]|\\.)*(?:"|$)
      | '[^'\n]*(?:'|$)
    )
    | (?P<comment>\#[^\n]*)
    | (?P<open>[\[{])
    | (?P<close>[\]}])
    """,
    re.VERBOSE | re.DOTALL | re.MULTILINE,
)
_JSON_TOKENS = re.compile(
    r'(?P<string>"(?:[^"\\]|\\.)*(?:"|\Z))|(?P<open>[\[{])|(?P<close>[\]}])', re.DOTALL
)
_MEMBER = re.compile(r"\s*:")


def check_size(path: Path, what: str) -> None:
    """Refuse a regular file of more than MAX_BYTES before it is read (a pipe is read only
    to MAX_BYTES + 1 characters, and :func:`check` refuses what is past MAX_BYTES). A file
    that cannot be stat'ed is left to the read, which says why."""
    try:
        facts = os.stat(path)
    except OSError:
        return
    if stat.S_ISREG(facts.st_mode) and facts.st_size > MAX_BYTES:
        raise StrataError(
            f"{path}: {facts.st_size:,} bytes; a {what} is at most 1 MiB ({MAX_BYTES:,} bytes)"
        )


def check(path: Path, text: str, json_syntax: bool, what: str) -> None:
    """Refuse ``text``, the document at ``path``, where it is past MAX_BYTES or nests its
    arrays and tables deeper than MAX_DEPTH."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise StrataError(f"{path}: more than 1 MiB; a {what} is at most 1 MiB")
    deep = too_deep(text, json_syntax)
    if deep is not None:
        line, keys = deep
        raise StrataError(
            f"{path}:{line}: {spelled(keys) or '(top level)'}: arrays and tables nested more "
            f"than {MAX_DEPTH} levels deep; a {what} holds at most {MAX_DEPTH}"
        )


def too_deep(text: str, json_syntax: bool) -> tuple[int, list[str]] | None:
    """Where ``text`` first nests deeper than MAX_DEPTH: the line, and the key whose value it
    is (in TOML the key the line sets, under the table above it; in JSON the top-level
    member); None where it never does."""
    tokens = _JSON_TOKENS if json_syntax else _TOML_TOKENS
    depth = 0
    table: list[str] = []  # TOML: the table the last header opened
    keys: list[str] = []  # the key of the value being read
    line_read = -1  # TOML: where the line whose keys were read last starts
    scanned = 0  # TOML: how far the text was searched for the start of a line
    for token in tokens.finditer(text):
        kind = token.lastgroup
        if kind == "open":
            if depth == 0 and not json_syntax:
                newline = text.rfind("\n", scanned, token.start())
                scanned = token.start()
                start = newline + 1 if newline >= 0 else max(line_read, 0)
                if start != line_read:
                    line_read = start
                    table, keys = _statement(text, start, table)
            depth += 1
            if depth > MAX_DEPTH:
                return text.count("\n", 0, token.start()) + 1, keys
        elif kind == "close":
            depth = max(depth - 1, 0)
        elif json_syntax and depth == 1 and _MEMBER.match(text, token.end()):
            keys = [_json_key(token.group())]
    return None


def _statement(text: str, start: int, table: list[str]) -> tuple[list[str], list[str]]:
    """The table after the TOML line at ``start``, and the keys it sets (a header: the
    table it opens; an assignment: its keys under ``table``)."""
    end = text.find("\n", start)
    named = line_keys(text[start : end if end >= 0 else len(text)])
    if named is None:
        return table, table
    is_header, keys = named
    return (keys, keys) if is_header else (table, table + keys)


def _json_key(token: str) -> str:
    try:
        key = json.loads(token)
    except ValueError:
        return token
    return key if isinstance(key, str) else token
