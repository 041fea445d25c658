"""Asks hipBLASLt, rocBLAS and cuBLASLt for their versions. Runs as
``python -m strata_core.tuning.library_probe`` in a child process and prints one JSON object:
``{"hipblaslt": {"library", "version"} or {"library", "error"} or null, "rocblas": ...,
"cublaslt": ...}``."""

from __future__ import annotations

import os
from typing import Any

from ..child import answer_json
from ..library_search import load_first, unloadable
from .libraries import LIBRARIES

CDEF = """
typedef void *hipblasLtHandle_t;
int hipblasLtCreate(hipblasLtHandle_t *handle);
int hipblasLtDestroy(hipblasLtHandle_t handle);
int hipblasLtGetVersion(hipblasLtHandle_t handle, int *version);
int rocblas_get_version_string_size(size_t *len);
int rocblas_get_version_string(char *buf, size_t len);
size_t cublasLtGetVersion(void);
"""


def hipblaslt(ffi: Any, lib: Any, name: str) -> dict[str, Any]:
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


def rocblas(ffi: Any, lib: Any, name: str) -> dict[str, Any]:
    size = ffi.new("size_t *")
    status = lib.rocblas_get_version_string_size(size)
    if status != 0:
        return {"library": name, "error": f"rocblas_get_version_string_size returned {status}"}
    if size[0] > LONGEST_VERSION:
        return {
            "library": name,
            "error": f"rocblas_get_version_string_size says {size[0]} bytes; a version is short",
        }
    text = ffi.new("char[]", size[0] + 1)
    status = lib.rocblas_get_version_string(text, size[0] + 1)
    if status != 0:
        return {"library": name, "error": f"rocblas_get_version_string returned {status}"}
    return {"library": name, "version": ffi.string(text).decode(errors="replace").strip()}


def cublaslt(ffi: Any, lib: Any, name: str) -> dict[str, Any]:
    return {"library": name, "version": str(lib.cublasLtGetVersion())}


ASK = {"hipblaslt": hipblaslt, "rocblas": rocblas, "cublaslt": cublaslt}
#: the longest version string a library may give (rocBLAS's is about 15 bytes)
LONGEST_VERSION = 256


def ask_one(library: str, ffi: Any, lib: Any, name: str) -> dict[str, Any]:
    """One library's answer; a library that lacks a function or fails in one (some other
    library under the name) is an error of its own, never the others'."""
    try:
        return ASK[library](ffi, lib, name)
    except AttributeError as missing:
        function = str(missing).split("'")[1] if "'" in str(missing) else str(missing)
        kind = LIBRARIES[library].kind.library
        return {"library": name, "error": f"has no {function}; not a {kind} library"}
    except Exception as exc:  # native code and cffi fail in many ways; each is one line
        return {"library": name, "error": f"{type(exc).__name__}: {exc}"}


def probe(env: dict[str, str]) -> dict[str, Any]:
    """Each library's answer; None for one not found, an error for one the variable names
    that does not load."""
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    answers: dict[str, dict[str, Any] | None] = {}
    for library in ASK:
        lib, name, _ = load_first(ffi, LIBRARIES[library].files(env))
        if lib is None or name is None:
            named = unloadable(env, LIBRARIES[library].variable)
            answers[library] = None if named is None else {"error": named}
        else:
            answers[library] = ask_one(library, ffi, lib, name)
    return answers


if __name__ == "__main__":
    answer_json(lambda: probe(dict(os.environ)))
