"""Where a ROCm library is looked for: the file an override variable names, else each soname
through the loader's search path, then under $ROCM_PATH/lib and /opt/rocm/lib."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from .answer_cache import Recorder
from .native_calls import traced

#: the calls a library lacks that a message names, before "and N more"
MISSING_SHOWN = 3


def _roots(env: Mapping[str, str]) -> list[str]:
    return [root for root in (env.get("ROCM_PATH"), "/opt/rocm") if root]


def candidates(env: Mapping[str, str], variable: str, sonames: Sequence[str]) -> list[str]:
    """Library names to try, in order."""
    if env.get(variable):
        return [env[variable]]
    return [
        name
        for soname in sonames
        for name in (soname, *(os.path.join(root, "lib", soname) for root in _roots(env)))
    ]


def unloadable(env: Mapping[str, str], variable: str) -> str | None:
    """Why the library an override variable names did not load, naming both; None where the
    variable names none."""
    path = env.get(variable)
    if not path:
        return None
    if not os.path.exists(path):
        return f"{variable}={path}: no such file"
    return f"{variable}={path}: not a library this process can load"


def load_first(ffi: Any, names: Sequence[str]) -> tuple[Any, str | None, list[str]]:
    """(lib, name, tried): the first of ``names`` that ``ffi`` loads, and those it could not;
    lib and name are None when none loads. Where this process marks its native calls
    (strata_core.native_calls), the library's calls are marked."""
    tried: list[str] = []
    for name in names:
        try:
            return traced(ffi, ffi.dlopen(name), name), name, tried
        except OSError:
            tried.append(name)
    return None, None, tried


def lacks(lib: Any, ffi: Any, call: str) -> bool:
    """Whether the library ``lib`` has no function ``call``. cffi says a symbol the library
    lacks with its own ``ffi.error``, which hasattr lets through."""
    try:
        getattr(lib, call)
    except (AttributeError, ffi.error):
        return True
    return False


def missing_calls(lib: Any, ffi: Any, calls: Sequence[str], path: str) -> str | None:
    """What the library ``lib`` (loaded from ``path`` through ``ffi``) lacks of ``calls``, as
    a reason, or None when it has them all."""
    missing = [call for call in calls if lacks(lib, ffi, call)]
    return f"{path} has no {', '.join(missing)}" if missing else None


def lacking_calls(lib: Any, ffi: Any, optional: Sequence[str] = ()) -> str | None:
    """What ``lib`` lacks of the functions its binding declares (of the names the binding
    declares, those the library cannot resolve: its constants always resolve), those in
    ``optional`` left out (strata uses them only where they are there), as "no A, B, C and N
    more"; None when it has them all."""
    missing = [name for name in dir(lib) if name not in optional and lacks(lib, ffi, name)]
    if not missing:
        return None
    shown = ", ".join(missing[:MISSING_SHOWN])
    more = len(missing) - MISSING_SHOWN
    return f"no {shown}" + (f" and {more} more" if more > 0 else "")


def record(env: Mapping[str, str], variable: str, recorder: Recorder) -> None:
    """Record what a search depends on: the loader's cache and the roots."""
    recorder.is_file("/etc/ld.so.cache")
    for path in (env.get(variable), *_roots(env)):
        if path:
            recorder.stat(path)
