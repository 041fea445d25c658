"""The HIP runtime probe. Runs as ``python -m strata_core.detect.hip_probe`` in a child process
and prints one JSON object, so that a runtime that crashes or hangs cannot take the caller down.
"""

from __future__ import annotations

import os
from typing import Any

from ..child import answer_json
from ..hip.binding import (
    HIP_ERROR_NO_DEVICE,
    HIP_SUCCESS,
    candidate_paths,
    device_facts,
    open_runtime,
)
from ..library_search import unloadable


def probe(env: dict[str, str]) -> dict[str, Any]:
    from ..hip._hip_ffi import ffi

    lib, path, tried = open_runtime(candidate_paths(env))
    if lib is None or path is None:
        return {"library": None, "tried": tried, "named": unloadable(env, "STRATA_HIP_LIBRARY")}
    return _query(ffi, lib, path)


def _query(ffi: Any, lib: Any, path: str) -> dict[str, Any]:
    def error(code: int) -> str:
        return str(ffi.string(lib.hipGetErrorString(code)).decode(errors="replace"))

    result: dict[str, Any] = {"library": path, "devices": []}
    version = ffi.new("int *")
    if lib.hipRuntimeGetVersion(version) == HIP_SUCCESS:
        result["runtime_version"] = version[0]
    count = ffi.new("int *")
    status = lib.hipGetDeviceCount(count)
    if status == HIP_ERROR_NO_DEVICE:
        return result
    if status != HIP_SUCCESS:
        result["error"] = f"hipGetDeviceCount: {error(status)} ({status})"
        return result
    for index in range(count[0]):
        result["devices"].append(device_facts(ffi, lib, index))
    return result


if __name__ == "__main__":
    answer_json(lambda: probe(dict(os.environ)))
