"""Built-in detector: asks the HIP runtime (libamdhip64) what it sees, in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from .. import answer_cache
from ..hookspec import hookimpl
from ..records import Detection, DetectionContext, DeviceReport
from .visibility import RUNTIME_VARIABLES

strata_api_version = 1


@hookimpl
def strata_detect_devices(context: DetectionContext) -> Detection | None:
    if not context.hip_probe:
        return None
    return run_probe(context)


def run_probe(context: DetectionContext) -> Detection:
    answer_cache.read("/etc/ld.so.cache")
    for library in (
        context.env.get("STRATA_HIP_LIBRARY"),
        context.env.get("ROCM_PATH"),
        "/opt/rocm",
    ):
        if library:
            answer_cache.stated(library)
    env = {k: v for k, v in os.environ.items() if k not in RUNTIME_VARIABLES}
    env.update(
        {
            k: v
            for k, v in context.env.items()
            if k in RUNTIME_VARIABLES or k in ("STRATA_HIP_LIBRARY", "ROCM_PATH")
        }
    )
    try:
        child = subprocess.run(
            [sys.executable, "-m", "strata_core.detect.hip_probe"],
            env=env,
            capture_output=True,
            text=True,
            timeout=context.hip_timeout_s,
        )
    except subprocess.TimeoutExpired:
        answer_cache.refuse("the HIP probe timed out")
        return Detection(
            problems=(
                f"HIP runtime probe gave no answer within {context.hip_timeout_s:g} s; "
                "using KFD facts only (STRATA_HIP_PROBE_TIMEOUT sets the limit)",
            )
        )
    if child.returncode != 0:
        answer_cache.refuse("the HIP probe failed")
        last = (child.stderr.strip().splitlines() or ["no message"])[-1]
        return Detection(
            problems=(
                f"HIP runtime probe failed (exit status {child.returncode}: {last}); "
                "using KFD facts only",
            )
        )
    try:
        answer = json.loads(child.stdout)
    except json.JSONDecodeError:
        return Detection(problems=("HIP runtime probe printed no JSON; using KFD facts only",))
    return interpret(answer)


def interpret(answer: dict) -> Detection:
    """Turn the probe's JSON answer into reports and notes."""
    library = answer.get("library")
    if library is None:
        return Detection(notes=("no HIP runtime found (tried libamdhip64.so.7, .so.6, .so.5)",))
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
    return Detection(reports=reports, notes=(f"{where} sees {len(devices)} device(s)",))


def _hip_version(version: int) -> str:
    """HIP_VERSION is major * 10_000_000 + minor * 100_000 + patch."""
    return f"{version // 10_000_000}.{version // 100_000 % 100}.{version % 100_000}"
