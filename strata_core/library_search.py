"""Where a ROCm library is looked for: the file an override variable names, else each soname
through the loader's search path, then under $ROCM_PATH/lib and /opt/rocm/lib."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from .answer_cache import Recorder


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
    lib and name are None when none loads."""
    tried: list[str] = []
    for name in names:
        try:
            return ffi.dlopen(name), name, tried
        except OSError:
            tried.append(name)
    return None, None, tried


def record(env: Mapping[str, str], variable: str, recorder: Recorder) -> None:
    """Record what a search depends on: the loader's cache and the roots."""
    recorder.is_file("/etc/ld.so.cache")
    for path in (env.get(variable), *_roots(env)):
        if path:
            recorder.stat(path)
