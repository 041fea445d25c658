"""Asks hipBLASLt and rocBLAS for their versions. Runs as
``python -m strata_core.tuning.library_probe`` in a child process and prints one JSON object:
``{"hipblaslt": {"library", "version"} or {"library", "error"} or null, "rocblas": ...}``."""

from __future__ import annotations

import json
import os
import sys

from ..library_search import candidates, unloadable

CDEF = """
typedef void *hipblasLtHandle_t;
int hipblasLtCreate(hipblasLtHandle_t *handle);
int hipblasLtDestroy(hipblasLtHandle_t handle);
int hipblasLtGetVersion(hipblasLtHandle_t handle, int *version);
int rocblas_get_version_string_size(size_t *len);
int rocblas_get_version_string(char *buf, size_t len);
"""

HIPBLASLT_SONAMES = ("libhipblaslt.so.1", "libhipblaslt.so.0", "libhipblaslt.so")
ROCBLAS_SONAMES = ("librocblas.so.5", "librocblas.so.4", "librocblas.so")


def _open(ffi, env: dict[str, str], variable: str, sonames: tuple[str, ...]):
    for name in candidates(env, variable, sonames):
        try:
            return ffi.dlopen(name), name
        except OSError:
            continue
    return None, None


def _missing(env: dict[str, str], variable: str) -> dict | None:
    """The answer for a library the variable names that did not load; None where it names
    none (then the library is simply not found)."""
    named = unloadable(env, variable)
    return None if named is None else {"error": named}


def hipblaslt(ffi, env: dict[str, str]) -> dict | None:
    lib, name = _open(ffi, env, "STRATA_HIPBLASLT_LIBRARY", HIPBLASLT_SONAMES)
    if lib is None:
        return _missing(env, "STRATA_HIPBLASLT_LIBRARY")
    handle = ffi.new("hipblasLtHandle_t *")
    status = lib.hipblasLtCreate(handle)
    if status != 0:
        return {"library": name, "error": f"hipblasLtCreate returned status {status}"}
    version = ffi.new("int *")
    status = lib.hipblasLtGetVersion(handle[0], version)
    lib.hipblasLtDestroy(handle[0])
    if status != 0:
        return {"library": name, "error": f"hipblasLtGetVersion returned status {status}"}
    return {"library": name, "version": str(version[0])}


def rocblas(ffi, env: dict[str, str]) -> dict | None:
    lib, name = _open(ffi, env, "STRATA_ROCBLAS_LIBRARY", ROCBLAS_SONAMES)
    if lib is None:
        return _missing(env, "STRATA_ROCBLAS_LIBRARY")
    size = ffi.new("size_t *")
    status = lib.rocblas_get_version_string_size(size)
    if status != 0:
        return {"library": name, "error": f"rocblas_get_version_string_size returned {status}"}
    text = ffi.new("char[]", size[0] + 1)
    status = lib.rocblas_get_version_string(text, size[0] + 1)
    if status != 0:
        return {"library": name, "error": f"rocblas_get_version_string returned {status}"}
    return {"library": name, "version": ffi.string(text).decode(errors="replace").strip()}


def probe(env: dict[str, str]) -> dict:
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    return {"hipblaslt": hipblaslt(ffi, env), "rocblas": rocblas(ffi, env)}


if __name__ == "__main__":
    json.dump(probe(dict(os.environ)), sys.stdout)
