"""Finding and loading the user's HIP runtime, and what it says of a device, through the cffi
declarations of native/bindings/strata_hip_runtime.h (_hip_ffi). Used by the probe
(strata_core.detect.hip_probe) and the GPU run (strata_core.hip.runtime), each in a child
process. The attribute ids are hipDeviceAttribute_t values of HIP's hip_runtime_api.h; the
gcnArchName offsets are those of hipDeviceProp_tR0600 and of the legacy layout, which LLVM's
offload-arch (AMDGPUArchByHIP.cpp) reads too."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..library_search import candidates, lacks, load_first

SONAMES = ("libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5")
HIP_SUCCESS = 0
HIP_ERROR_NO_DEVICE = 100
ATTR_INTEGRATED = 16
ATTR_WARP_SIZE = 87
# gcnArchName offsets in hipDeviceProp_tR0600 and in the legacy (R0000) layout.
GCN_ARCH_NAME_OFFSETS = (("hipGetDevicePropertiesR0600", 1160), ("hipGetDeviceProperties", 396))
PROPS_BUFFER_BYTES = 4096


def candidate_paths(env: Mapping[str, str]) -> list[str]:
    """STRATA_HIP_LIBRARY, else each soname of SONAMES (strata_core.library_search)."""
    return candidates(env, "STRATA_HIP_LIBRARY", SONAMES)


def open_runtime(candidates: Sequence[str]) -> tuple[Any, str | None, list[str]]:
    """(lib, path, tried): the first of ``candidates`` that loads, and those that did not;
    lib and path are None when none loads."""
    from ..hip._hip_ffi import ffi

    return load_first(ffi, candidates)


def device_facts(ffi: Any, lib: Any, index: int) -> dict[str, Any]:
    """What the runtime says of one device: name, PCI address, memory, attributes, arch."""
    device: dict[str, Any] = {"index": index}
    text = ffi.new("char[256]")
    if lib.hipDeviceGetName(text, 256, index) == HIP_SUCCESS:
        device["name"] = ffi.string(text).decode(errors="replace")
    if lib.hipDeviceGetPCIBusId(text, 256, index) == HIP_SUCCESS:
        device["pci"] = ffi.string(text).decode(errors="replace").lower()
    total = ffi.new("size_t *")
    if lib.hipDeviceTotalMem(total, index) == HIP_SUCCESS:
        device["total_mem"] = total[0]
    value = ffi.new("int *")
    if lib.hipDeviceGetAttribute(value, ATTR_INTEGRATED, index) == HIP_SUCCESS:
        device["integrated"] = bool(value[0])
    if lib.hipDeviceGetAttribute(value, ATTR_WARP_SIZE, index) == HIP_SUCCESS:
        device["warp_size"] = value[0]
    props = ffi.new("char[]", PROPS_BUFFER_BYTES)
    for symbol, offset in GCN_ARCH_NAME_OFFSETS:
        if lacks(lib, ffi, symbol):  # ROCm 5 has no R0600 call
            continue
        if getattr(lib, symbol)(props, index) == HIP_SUCCESS:
            device["gcn_arch_name"] = ffi.string(props + offset).decode(errors="replace")
            break
    return device
