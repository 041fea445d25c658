"""Built-in detector: asks the CUDA driver (libcuda.so.1) what it sees, in a child process:
each device's name, compute capability, memory and PCI address, by CUDA ordinal."""

from __future__ import annotations

from .. import library_search
from ..child import ChildFailed, child_environment, run_json_module
from ..hookspec import hookimpl
from ..records import Detection, DetectionContext, DeviceReport
from .kfd import MAX_MEMORY_BYTES

strata_api_version = 1

#: what the probe child reads: the driver's own visibility variable and where it is
OWNED = frozenset({"CUDA_VISIBLE_DEVICES", "STRATA_CUDA_LIBRARY"})


@hookimpl
def strata_detect_devices(context: DetectionContext) -> Detection | None:
    if not context.cuda_probe:
        return None
    library_search.record(context.env, "STRATA_CUDA_LIBRARY", context.recorder)
    try:
        answer = run_json_module(
            "strata_core.cuda.probe",
            child_environment(context.env, OWNED.__contains__),
            context.hip_timeout_s,
            "CUDA driver probe",
            context.recorder,
        )
    except ChildFailed as failed:
        return Detection(problems=(f"{failed}; NVIDIA cards are known by PCI only",))
    return interpret(answer)


def interpret(answer: dict) -> Detection:
    """Turn the probe's JSON answer into reports and notes."""
    library = answer.get("library")
    if library is None:
        named = answer.get("named")
        if named:
            return Detection(problems=(f"no CUDA driver: {named}",))
        return Detection(notes=("no CUDA driver found (tried libcuda.so.1)",))
    version = answer.get("driver_version")
    where = f"CUDA driver {library}" + (f" ({_version(version)})" if version else "")
    if "error" in answer:
        return Detection(problems=(f"{where}: {answer['error']}",))
    devices = answer.get("devices", [])
    problems = [
        f"{where}: device {d['index']}: {d['error']}; skipped" for d in devices if "error" in d
    ]
    devices = [d for d in devices if "error" not in d]
    for d in devices:
        if (d.get("total_mem") or 0) > MAX_MEMORY_BYTES:
            problems.append(
                f"{where}: device {d['index']}: {d.pop('total_mem')} bytes of memory; expected up "
                "to 1 PiB"
            )
    reports = tuple(
        DeviceReport(
            source="nvidia",
            pci=d.get("pci"),
            cuda_index=d["index"],
            name=d.get("name") or None,
            gfx=d.get("target"),
            wave_size=d.get("warp_size"),
            vram_bytes=d.get("total_mem"),
            integrated=d.get("integrated"),
            integrated_evidence="CUDA integrated attribute" if "integrated" in d else None,
            vendor="nvidia",
        )
        for d in devices
    )
    return Detection(
        reports=reports,
        problems=tuple(problems),
        notes=(f"{where} sees {len(devices)} device(s)",),
        complete_for=("nvidia",),
    )


def _version(version: int) -> str:
    """CUDA_VERSION is major * 1000 + minor * 10."""
    return f"CUDA {version // 1000}.{version % 1000 // 10}"
