"""`strata-core env`: what a report of a run needs (AMD_HIP.md, "Reporting a Windows AMD run":
the card, the driver, what the device lists say), in one command: strata and its plugins,
Python, the OS, the GPU drivers and runtimes found, the BLAS libraries' versions, the devices,
the variables that change a plan and the run config."""

from __future__ import annotations

import json
import platform
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import __version__
from ..answer_cache import ENV_PREFIXES
from ..plan import config as run_config
from ..plan.pipeline import PlanRequest, detect, seconds_variable

#: where the kernel drivers say their version
DRIVER_FILES = {
    "amdgpu": Path("/sys/module/amdgpu/version"),
    "nvidia": Path("/proc/driver/nvidia/version"),
}


def os_name() -> str:
    """The distribution's PRETTY_NAME (os-release), else the platform's name."""
    try:
        for line in Path("/etc/os-release").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            if key == "PRETTY_NAME":
                return value.strip().strip('"')
    except OSError:
        pass
    return platform.platform()


def rocm_version(env: Mapping[str, str]) -> str | None:
    """The ROCm install's version ($ROCM_PATH, else /opt/rocm: .info/version), if any."""
    for root in (env.get("ROCM_PATH"), "/opt/rocm"):
        if root and (line := _first_line(Path(root, ".info", "version"))):
            return f"{line} ({root})"
    return None


def numpy_blas() -> dict[str, Any]:
    """numpy's version and the BLAS it calls (threadpoolctl), which the host prompt GEMM runs."""
    import numpy
    from threadpoolctl import threadpool_info

    blas = next((i for i in threadpool_info() if i.get("user_api") == "blas"), None)
    named = f"{blas['internal_api']} {blas.get('version') or ''}".strip() if blas else None
    return {"version": numpy.__version__, "blas": named}


def _first_line(path: Path) -> str | None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return lines[0].strip() if lines else None


def report(request: PlanRequest) -> dict[str, Any]:
    """Everything the report holds, as JSON-ready data."""
    from ..gpu.backends import backend_for
    from ..host.platform import cpu_name, isa_level, kernel_isa
    from ..tuning import versions
    from .answers import SCHEMA_VERSION, device_dict

    env = request.env
    path, config = run_config.find_and_load(request.config, env, request.recorder)
    detected = detect(request, config)
    os_label = "windows" if sys.platform == "win32" else "linux"
    timeout = seconds_variable(env, "STRATA_HIP_PROBE_TIMEOUT", 15.0)
    libraries = versions.probe(env, timeout, request.recorder)
    return {
        "schema_version": SCHEMA_VERSION,
        "strata": __version__,
        "plugins": [
            {
                "name": r.name,
                "distribution": r.distribution,
                "version": r.version,
                "status": r.status.value,
            }
            for r in detected.manager.records.values()
        ],
        "python": f"{platform.python_version()} ({sys.executable})",
        "os": os_name(),
        "kernel": platform.release(),
        "cpu": {"name": cpu_name(), "isa_level": isa_level(), "host_kernels": kernel_isa()},
        "numpy": numpy_blas(),
        "rocm": rocm_version(env),
        "drivers": {name: _first_line(file) for name, file in DRIVER_FILES.items()},
        "runtimes": list(detected.found.notes),
        "libraries": {name: {"version": v.version, "how": v.how} for name, v in libraries.items()},
        "devices": [
            device_dict(a, detected.selection, os_label, env) for a in detected.assignments
        ],
        "selected": list(detected.selection.indices),
        "backend": backend_for(detected.selection.vendor) or "hip",
        "variables": {k: v for k, v in sorted(env.items()) if k.startswith(ENV_PREFIXES)},
        "run_config": {
            "path": str(path) if path else None,
            "gpu": config.gpu,
            "exe": config.exe,
            "env": dict(config.env),
            "args": list(config.args),
        },
        "warnings": list(detected.warnings),
    }


def text(answer: Mapping[str, Any]) -> str:
    cpu, numpy = answer["cpu"], answer["numpy"]
    lines = [f"strata {answer['strata']}", "plugins:"]
    lines += [
        f"  {p['name']} ({p['distribution']} {p['version']}): {p['status']}"
        for p in answer["plugins"]
    ]
    lines += [
        f"python: {answer['python']}",
        f"os: {answer['os']} (kernel {answer['kernel']})",
        f"cpu: {cpu['name']} ({cpu['isa_level']}; host kernels {cpu['host_kernels']})",
        f"numpy: {numpy['version']} (BLAS: {numpy['blas'] or 'none found'})",
        f"rocm: {answer['rocm'] or 'none installed'}",
        "drivers:",
    ]
    lines += [f"  {name}: {line or 'not loaded'}" for name, line in answer["drivers"].items()]
    lines += ["runtimes:"] + [f"  {note}" for note in answer["runtimes"]]
    lines += ["libraries:"]
    lines += [
        f"  {name}: {info['version'] or 'unknown'} ({info['how']})"
        for name, info in answer["libraries"].items()
    ]
    lines += ["devices:"]
    lines += [
        f"  {'*' if d['selected'] else ' '} {'-' if d['index'] is None else d['index']}  "
        f"{d['name']}  {d['gfx']}  {d['family']}  {d['status']}; {d['reason']}"
        for d in answer["devices"]
    ] or ["  none"]
    lines += ["variables that change a plan:"]
    lines += [f"  {k}={v}" for k, v in answer["variables"].items()] or ["  none"]
    config = answer["run_config"]
    lines += [f"run config: {config['path'] or 'none'}"]
    if config["path"]:
        gpu = "none" if config["gpu"] is None else config["gpu"]  # N, [N, ...] or "all"
        lines += [
            f"  exe: {config['exe'] or 'none'}",
            f"  gpu: {gpu if isinstance(gpu, str | int) else ','.join(map(str, gpu or ()))}",
            f"  args: {shlex.join(config['args']) or 'none'}",
            "  env:" + ("" if config["env"] else " none"),
        ]
        lines += [f"    {k}={v}" for k, v in config["env"].items()]
    lines += [f"warning: {w}" for w in answer["warnings"]]
    return "\n".join(lines)


def run_env(request: PlanRequest, as_json: bool) -> int:
    answer = report(request)
    print(json.dumps(answer, indent=2) if as_json else text(answer))
    return 0
