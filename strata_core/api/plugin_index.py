"""The entry points of one group, as ``importlib.metadata`` finds them, remembered with what
they were read from (each ``sys.path`` folder's listing and the stat of its distributions'
metadata folders and files), so that a start whose installed distributions are unchanged
neither imports ``importlib.metadata`` (and the email parser it reads metadata with) nor
reads every distribution's metadata again.

The index is checked in full on every read, as the answer cache checks its answers, so it is
kept when the answer cache is turned off (``STRATA_CACHE=0``); it lives beside the answers,
one for each interpreter and ``sys.path``, and counts among them for the folder's limit.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import zlib
from collections.abc import Sequence

from .. import answer_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.metadata import EntryPoint
    from typing import Any

FORMAT = 1
#: the names of what ``importlib.metadata`` reads a distribution from, in a sys.path folder
METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg")
METADATA_FILES = ("entry_points.txt", "METADATA", "PKG-INFO")


class Distribution:
    """The name and version of the distribution an indexed entry point comes from."""

    def __init__(self, name: str, version: str) -> None:
        self.name = name
        self.version = version


class IndexedEntryPoint:
    """An entry point read from the index: its name, distribution, and ``load`` as
    ``EntryPoint.load`` does it (the module imported, then the attribute path followed)."""

    def __init__(self, name: str, module: str, attr: str, dist: Distribution | None) -> None:
        self.name = name
        self.module = module
        self.attr = attr
        self.dist = dist

    def load(self) -> object:
        found = importlib.import_module(self.module)
        return functools.reduce(getattr, filter(None, self.attr.split(".")), found)


def entry_points(group: str, env: dict[str, str]) -> Sequence[IndexedEntryPoint | EntryPoint]:
    """The group's entry points: from the index while what it was read from is unchanged,
    else from ``importlib.metadata`` (and the index written anew)."""
    path = _index_path(group, env)
    state = _installed()
    index = answer_cache.read_entry(path)
    if isinstance(index, dict) and index.get("state") == state:
        return [
            IndexedEntryPoint(name, module, attr, Distribution(*dist) if dist else None)
            for name, module, attr, dist in index["entry_points"]
        ]
    from importlib.metadata import entry_points as read

    found = tuple(read(group=group))
    _store(path, state, found)
    return found


def _installed() -> list[Any]:
    """What ``importlib.metadata`` reads the installed distributions from: every sys.path
    entry (a file, such as a zip, by stat), and in each folder the distributions' metadata
    folders and files, by stat."""
    state: list[Any] = [FORMAT, sys.version, sys.executable]
    for entry in sys.path:
        folder = entry or "."
        names = answer_cache.listing(folder)
        state.append((entry, answer_cache.stat_of(folder) if names is None else None))
        for name in names or ():
            if name.lower().endswith(METADATA_SUFFIXES):
                info = os.path.join(folder, name)
                files = [answer_cache.stat_of(os.path.join(info, f)) for f in METADATA_FILES]
                state.append((name, answer_cache.stat_of(info), files))
    return state


def _index_path(group: str, env: dict[str, str]) -> str:
    key = repr([group, sys.executable, sys.path])
    return os.path.join(
        answer_cache.directory(env), f"entry-points-{zlib.crc32(key.encode()):08x}.marshal"
    )


def _store(path: str, state: list[Any], found: Sequence[EntryPoint]) -> None:
    """Write the index atomically; not at all where an entry point's value does not parse
    (its ``load`` then fails as ``importlib.metadata`` says) or the folder is not writable."""
    try:
        rows = [
            (ep.name, ep.module, ep.attr or "", ep.dist and (ep.dist.name, ep.dist.version))
            for ep in found
        ]
    except AttributeError:
        return
    answer_cache.write_entry(path, {"state": state, "entry_points": rows})
