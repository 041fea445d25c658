"""What `strata-core env` reports, gathered as one record (cli/answers.py renders it): strata
and its plugins, Python, the OS, the GPU drivers and runtimes found, the BLAS libraries'
versions, the devices, the variables that change a plan and the run config."""

from __future__ import annotations

import platform
import sys
from collections.abc import Mapping
from pathlib import Path

import attrs

from .. import __version__, bounded
from ..answer_cache import ENV_PREFIXES
from ..api.manager import PluginRecord
from ..plan import config as run_config
from ..plan.claims import Assignment
from ..plan.detection import PlanRequest, detect, detection_context, seconds_variable
from ..plan.plan import HOST
from ..plan.selection import Selection
from ..tuning.versions import LibraryVersion

#: where the kernel drivers say their version
DRIVER_FILES = {
    "amdgpu": Path("/sys/module/amdgpu/version"),
    "nvidia": Path("/proc/driver/nvidia/version"),
}


@attrs.frozen
class CpuFacts:
    name: str
    isa_level: str
    host_kernels: str


@attrs.frozen
class NumpyFacts:
    """numpy's version and the BLAS it calls, which the host prompt GEMM runs."""

    version: str
    blas: str | None


@attrs.frozen
class EnvReport:
    """Everything `env` says; ``os_label`` and ``env`` give each device its package status."""

    strata: str
    plugins: tuple[PluginRecord, ...]
    python: str
    os: str
    kernel: str
    cpu: CpuFacts
    numpy: NumpyFacts
    rocm: str | None
    drivers: Mapping[str, str | None]
    runtimes: tuple[str, ...]
    libraries: Mapping[str, LibraryVersion]
    assignments: tuple[Assignment, ...]
    selection: Selection
    os_label: str
    backend: str
    env: Mapping[str, str]
    config_path: Path | None
    config: run_config.RunConfig
    warnings: tuple[str, ...]

    @property
    def variables(self) -> dict[str, str]:
        """The variables that change a plan, by name."""
        return {k: v for k, v in sorted(self.env.items()) if k.startswith(ENV_PREFIXES)}


def os_name() -> str:
    """The distribution's PRETTY_NAME (os-release), else the platform's name."""
    try:
        for line in bounded.read_text("/etc/os-release", bounded.SYSTEM_FILE).splitlines():
            key, _, value = line.partition("=")
            if key == "PRETTY_NAME":
                return value.strip().strip('"')
    except (OSError, UnicodeDecodeError):
        pass
    return platform.platform()


def rocm_version(env: Mapping[str, str]) -> str | None:
    """The ROCm install's version ($ROCM_PATH, else /opt/rocm: .info/version), if any."""
    for root in (env.get("ROCM_PATH"), "/opt/rocm"):
        if root and (line := _first_line(Path(root, ".info", "version"))):
            return f"{line} ({root})"
    return None


def numpy_blas() -> NumpyFacts:
    """numpy's version and the BLAS it calls (threadpoolctl)."""
    import numpy
    from threadpoolctl import threadpool_info

    blas = next((i for i in threadpool_info() if i.get("user_api") == "blas"), None)
    named = f"{blas['internal_api']} {blas.get('version') or ''}".strip() if blas else None
    return NumpyFacts(numpy.__version__, named)


def _first_line(path: Path) -> str | None:
    try:
        data = bounded.read_bytes(path, bounded.SYSTEM_FILE)
    except OSError:
        return None
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[0].strip() if lines else None


def runtimes(request: PlanRequest) -> tuple[str, ...]:
    """What the HIP runtime and NVML (the NVIDIA driver) say, each asked whatever sysfs shows
    (unless turned off), or where each was looked for."""
    from ..detect import hip, nvidia

    context = detection_context(request)
    env = request.env
    said = []
    for name, asked, off, probe in (
        ("HIP runtime", request.hip is not False and env.get("STRATA_HIP_PROBE", "1") != "0",
         "--no-hip" if request.hip is False else "STRATA_HIP_PROBE=0", hip.run_probe),
        ("NVML", env.get("STRATA_CUDA_PROBE", "1") != "0", "STRATA_CUDA_PROBE=0",
         nvidia.run_probe),
    ):  # fmt: skip
        if not asked:
            said.append(f"{name}: not asked ({off})")
            continue
        found = probe(context)
        said += [*found.notes, *found.problems]
    return tuple(said)


def gather(request: PlanRequest) -> EnvReport:
    """Everything the report holds."""
    from ..gpu.backends import backend_for
    from ..host.platform import cpu_name, isa_level, kernel_isa
    from ..tuning import versions

    env = request.env
    path, config = run_config.find_and_load(request.config, env, request.recorder)
    detected = detect(request, config)
    selection = detected.selection
    timeout = seconds_variable(env, "STRATA_HIP_PROBE_TIMEOUT", 15.0)
    return EnvReport(
        strata=__version__,
        plugins=tuple(detected.manager.records.values()),
        python=f"{platform.python_version()} ({sys.executable})",
        os=os_name(),
        kernel=platform.release(),
        cpu=CpuFacts(cpu_name(), isa_level(), kernel_isa()),
        numpy=numpy_blas(),
        rocm=rocm_version(env),
        drivers={name: _first_line(file) for name, file in DRIVER_FILES.items()},
        runtimes=runtimes(request),
        libraries=versions.probe(env, timeout, request.recorder),
        assignments=detected.assignments,
        selection=selection,
        os_label="windows" if sys.platform == "win32" else "linux",
        backend=(backend_for(selection.vendor) if selection.indices else None) or HOST,
        env=env,
        config_path=path,
        config=config,
        warnings=tuple(detected.warnings),
    )
