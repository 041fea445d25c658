"""Built-in detector: asks the HIP runtime (libamdhip64) what it sees, in a child process,
where sysfs shows an AMD GPU (strata_core.detect.hardware)."""

from __future__ import annotations

from .. import log
from ..api.hookspec import hookimpl
from ..api.records import Detection, DetectionContext, DeviceReport
from ..people import counted
from .hardware import amd_gpu
from .recording import recorder_of
from .visibility import is_runtime_variable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any


def _owned(name: str) -> bool:
    return is_runtime_variable(name) or name in ("STRATA_HIP_LIBRARY", "ROCM_PATH")


strata_api_version = 2


@hookimpl
def strata_detect_devices(context: DetectionContext) -> Detection | None:
    if not context.hip_probe:
        return None
    evidence = amd_gpu(context.sysfs, recorder_of(context))
    if evidence is None:
        log.debug(
            f"HIP runtime not asked: no KFD GPU node and no AMD PCI display function under "
            f"{context.sysfs}",
            kind="detection",
        )
        return None
    log.debug(f"asking the HIP runtime: {evidence}", kind="detection")
    return run_probe(context)


def run_probe(context: DetectionContext) -> Detection:
    from .. import library_search
    from ..child import ChildFailed, child_environment, run_json_module

    library_search.record(context.env, "STRATA_HIP_LIBRARY", recorder_of(context))
    env = child_environment(context.env, _owned)
    try:
        answer = run_json_module(
            "strata_core.detect.hip_probe",
            env,
            context.hip_timeout_s,
            "HIP runtime probe",
            recorder_of(context),
        )
    except ChildFailed as failed:
        problem = str(failed)
        hint = " (STRATA_HIP_PROBE_TIMEOUT sets the limit)" if "no answer" in problem else ""
        return Detection(problems=(f"{problem}; using KFD facts only{hint}",))
    return interpret(answer)


def interpret(answer: dict[str, Any]) -> Detection:
    """Turn the probe's JSON answer into reports and notes."""
    library = answer.get("library")
    if library is None:
        named = answer.get("named")
        if named:
            return Detection(problems=(f"no HIP runtime: {named}",))
        tried = ", ".join(answer.get("tried") or ["libamdhip64.so.7", ".so.6", ".so.5"])
        return Detection(notes=(f"no HIP runtime found (tried {tried})",))
    version = answer.get("runtime_version")
    where = f"HIP runtime {library}" + (f" (version {_hip_version(version)})" if version else "")
    if "error" in answer:
        return Detection(problems=(f"{where}: {answer['error']}",))
    devices = answer.get("devices", [])
    reports = tuple(
        DeviceReport(
            source="hip",
            pci=d.get("pci"),
            hip_index=d["index"],
            name=d.get("name") or None,
            gfx=(d.get("gcn_arch_name") or "").split(":", 1)[0] or None,
            wave_size=d.get("warp_size"),
            vram_bytes=d.get("total_mem"),
            integrated=d.get("integrated"),
            integrated_evidence=("HIP Integrated attribute" if "integrated" in d else None),
        )
        for d in devices
    )
    return Detection(reports=reports, notes=(f"{where} sees {counted(len(devices), 'device')}",))


def _hip_version(version: int) -> str:
    """HIP_VERSION is major * 10_000_000 + minor * 100_000 + patch."""
    return f"{version // 10_000_000}.{version // 100_000 % 100}.{version % 100_000}"
