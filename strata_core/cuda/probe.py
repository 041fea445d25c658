"""The CUDA driver probe. Runs as ``python -m strata_core.cuda.probe`` in a child process and
prints one JSON object, so that a driver that crashes or hangs cannot take the caller down.
The driver applies CUDA_VISIBLE_DEVICES itself: the devices it lists are the visible ones, by
ordinal."""

from __future__ import annotations

import os

from ..child import answer_json
from ..library_search import unloadable
from .driver import candidate_paths, device_facts, open_driver


def probe(env: dict[str, str]) -> dict:
    from ._cuda_ffi import ffi

    lib, path, tried = open_driver(candidate_paths(env))
    if lib is None:
        return {"library": None, "tried": tried, "named": unloadable(env, "STRATA_CUDA_LIBRARY")}
    result: dict = {"library": path, "devices": []}
    status = lib.cuInit(0)
    if status == lib.CUDA_ERROR_NO_DEVICE:
        return result
    if status != lib.CUDA_SUCCESS:
        result["error"] = f"cuInit: error {status}"
        return result
    version = ffi.new("int *")
    if lib.cuDriverGetVersion(version) == lib.CUDA_SUCCESS:
        result["driver_version"] = version[0]
    count = ffi.new("int *")
    status = lib.cuDeviceGetCount(count)
    if status != lib.CUDA_SUCCESS:
        result["error"] = f"cuDeviceGetCount: error {status}"
        return result
    result["devices"] = [device_facts(ffi, lib, ordinal) for ordinal in range(count[0])]
    return result


if __name__ == "__main__":
    answer_json(lambda: probe(dict(os.environ)))
