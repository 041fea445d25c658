"""NVML (libnvidia-ml.so.1) bound through cffi in ABI mode: the declarations of
native/bindings/strata_nvml.h, compiled into _nvml_ffi at install. What nvidia-smi reads, in
tens of milliseconds: the driver reports each card without a CUDA context, so this is how
strata learns what an NVIDIA card is; the CUDA driver itself is opened only by a run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..library_search import candidates, lacking_calls, load_first, unloadable

SONAMES = ("libnvidia-ml.so.1",)
VARIABLE = "STRATA_NVML_LIBRARY"


def candidate_paths(env: Mapping[str, str]) -> list[str]:
    """STRATA_NVML_LIBRARY, else libnvidia-ml.so.1 through the loader's search path."""
    return candidates(env, VARIABLE, SONAMES)


def query(env: Mapping[str, str]) -> dict[str, Any]:
    """What NVML says of the driver and of every card, by NVML index (nvidia-smi's, which
    CUDA_VISIBLE_DEVICES counts in), as JSON-ready values."""
    from ._nvml_ffi import ffi

    lib, path, tried = load_first(ffi, candidate_paths(env))
    if lib is None:
        return {"library": None, "tried": tried, "named": unloadable(env, VARIABLE)}
    answer: dict[str, Any] = {"library": path, "devices": []}
    lacking = lacking_calls(lib, ffi)
    if lacking:
        return answer | {"error": f"not an NVML strata can use: it has {lacking}"}

    def failed(call: str, status: int) -> dict[str, Any]:
        return answer | {"error": f"{call}: {error_text(ffi, lib, status)}"}

    status = lib.nvmlInit_v2()
    if status != lib.NVML_SUCCESS:
        return failed("nvmlInit", status)
    try:
        text = ffi.new("char[]", lib.NVML_TEXT_BUFFER_SIZE)
        if lib.nvmlSystemGetDriverVersion(text, len(text)) == lib.NVML_SUCCESS:
            answer["driver_version"] = ffi.string(text).decode(errors="replace")
        version = ffi.new("int *")
        if lib.nvmlSystemGetCudaDriverVersion_v2(version) == lib.NVML_SUCCESS:
            answer["cuda_version"] = version[0]
        count = ffi.new("unsigned int *")
        status = lib.nvmlDeviceGetCount_v2(count)
        if status != lib.NVML_SUCCESS:
            return failed("nvmlDeviceGetCount", status)
        handle = ffi.new("nvmlDevice_t *")
        for index in range(count[0]):
            status = lib.nvmlDeviceGetHandleByIndex_v2(index, handle)
            if status != lib.NVML_SUCCESS:
                refused = {"handle": error_text(ffi, lib, status)}
                answer["devices"].append({"index": index, "refused": refused})
                continue
            answer["devices"].append(card_facts(ffi, lib, handle[0]) | {"index": index})
    finally:
        lib.nvmlShutdown()
    return answer


def card_facts(ffi: Any, lib: Any, device: Any) -> dict[str, Any]:
    """One card's name, UUID, PCI address, memory, compute capability and MIG devices; a fact
    the driver refuses is left out, and its refusal kept under ``refused`` (an unchecked
    answer: strata_core.detect.nvml_facts checks it)."""
    facts: dict[str, Any] = {}
    refused: dict[str, str] = {}

    def asked(fact: str, status: int) -> bool:
        if status != lib.NVML_SUCCESS:
            refused[fact] = error_text(ffi, lib, status)
        return bool(status == lib.NVML_SUCCESS)

    text = ffi.new("char[]", lib.NVML_TEXT_BUFFER_SIZE)
    for key, call in (("name", lib.nvmlDeviceGetName), ("uuid", lib.nvmlDeviceGetUUID)):
        if asked(key, call(device, text, len(text))):
            facts[key] = ffi.string(text).decode(errors="replace")
    pci = ffi.new("nvmlPciInfo_t *")
    if asked("pci", lib.nvmlDeviceGetPciInfo_v3(device, pci)):
        facts["pci"] = sysfs_address(ffi.string(pci.busId).decode(errors="replace"))
    memory = ffi.new("nvmlMemory_t *")
    if asked("memory", lib.nvmlDeviceGetMemoryInfo(device, memory)):
        facts["total_mem"] = memory.total
    major, minor = ffi.new("int *"), ffi.new("int *")
    if asked("capability", lib.nvmlDeviceGetCudaComputeCapability(device, major, minor)):
        facts["capability"] = [major[0], minor[0]]
    facts["mig"] = _mig_devices(ffi, lib, device)
    return facts | ({"refused": refused} if refused else {})


def error_text(ffi: Any, lib: Any, status: int) -> str:
    """``Unknown Error (999)``: what nvmlErrorString says of a status, and the status."""
    return f"{ffi.string(lib.nvmlErrorString(status)).decode(errors='replace')} ({status})"


def _mig_devices(ffi: Any, lib: Any, device: Any) -> list[dict[str, Any]]:
    """The MIG devices of a card in MIG mode (their UUIDs and memory); none otherwise."""
    current, pending = ffi.new("unsigned int *"), ffi.new("unsigned int *")
    if lib.nvmlDeviceGetMigMode(device, current, pending) != lib.NVML_SUCCESS:
        return []
    if current[0] != lib.NVML_DEVICE_MIG_ENABLE:
        return []
    count = ffi.new("unsigned int *")
    if lib.nvmlDeviceGetMaxMigDeviceCount(device, count) != lib.NVML_SUCCESS:
        return []
    found = []
    mig = ffi.new("nvmlDevice_t *")
    text = ffi.new("char[]", lib.NVML_TEXT_BUFFER_SIZE)
    memory = ffi.new("nvmlMemory_t *")
    for index in range(count[0]):
        if lib.nvmlDeviceGetMigDeviceHandleByIndex(device, index, mig) != lib.NVML_SUCCESS:
            continue  # no compute instance in this slot
        if lib.nvmlDeviceGetUUID(mig[0], text, len(text)) != lib.NVML_SUCCESS:
            continue
        facts: dict[str, Any] = {"uuid": ffi.string(text).decode(errors="replace")}
        if lib.nvmlDeviceGetMemoryInfo(mig[0], memory) == lib.NVML_SUCCESS:
            facts["total_mem"] = memory.total
        found.append(facts)
    return found


def sysfs_address(bus_id: str) -> str:
    """NVML's ``00000000:41:00.0`` as sysfs names the function: ``0000:41:00.0``."""
    domain, _, rest = bus_id.strip().lower().partition(":")
    try:
        return f"{int(domain, 16):04x}:{rest}"
    except ValueError:
        return bus_id.strip().lower()
