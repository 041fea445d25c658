"""Which native call a GPU child is in. Once ``mark_calls_in`` names a file, every library
that strata_core.library_search loads marks each of its calls there before the call starts
and clears the mark when it returns; the file is mapped shared, so that when the process
dies inside a call or is killed in one that never returns, the parent reads its name
(``call_in``) and says it, as "in cuStreamSynchronize of /usr/lib/libcuda.so.1"."""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Any

#: the longest mark kept: a call's name and its library's path
MARK_BYTES = 512

_page: mmap.mmap | None = None


def mark_calls_in(path: Path) -> None:
    """From now on, this process's native calls are marked in ``path`` (made here)."""
    global _page
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(descriptor, MARK_BYTES)
        _page = mmap.mmap(descriptor, MARK_BYTES)
    finally:
        os.close(descriptor)


def call_in(path: Path) -> str | None:
    """The call a process was in when it stopped, as marked in ``path``; None where it was in
    none (or marked nothing)."""
    try:
        with open(path, "rb") as page:
            said = page.read(MARK_BYTES).split(b"\0", 1)[0]
    except OSError:
        return None
    return said.decode(errors="replace") or None


def traced(ffi: Any, lib: Any, path: str) -> Any:
    """``lib`` (a cffi library loaded from ``path`` through ``ffi``) with its calls marked,
    where this process marks them; else ``lib`` itself."""
    return lib if _page is None else _MarkedLibrary(ffi, lib, path, _page)


class _MarkedLibrary:
    """A cffi library whose functions mark their call in the page while they run; its
    constants and a missing symbol's error are the library's own."""

    def __init__(self, ffi: Any, lib: Any, path: str, page: mmap.mmap) -> None:
        self._ffi, self._lib, self._path, self._page = ffi, lib, path, page

    def __dir__(self) -> list[str]:
        return dir(self._lib)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._lib, name)
        if isinstance(value, self._ffi.CData) and self._ffi.typeof(value).kind == "function":
            value = _marked(value, f"{name} of {self._path}", self._page)
        setattr(self, name, value)
        return value


def _marked(function: Any, label: str, page: mmap.mmap) -> Any:
    mark = label.encode(errors="replace")[: MARK_BYTES - 1] + b"\0"
    end = len(mark)

    def call(*args: Any) -> Any:
        page[:end] = mark
        try:
            return function(*args)
        finally:
            page[0] = 0

    return call
