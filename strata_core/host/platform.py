"""Facts about the host CPU: its name, its x86-64 ISA level (which names a host tuning
table), the host library's kernel variant, and the BLAS library version."""

from __future__ import annotations

import platform
from pathlib import Path

from .. import bounded

CPUINFO = Path("/proc/cpuinfo")

# x86-64 micro-architecture levels by the /proc/cpuinfo flags each adds (psABI).
_LEVELS = (
    ("x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}),
    ("x86-64-v3", {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}),
    ("x86-64-v2", {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"}),
)

#: The host library's kernel variants, best first, by the flags each needs (native/host/isa.c).
KERNEL_ISAS: tuple[tuple[str, set[str]], ...] = (
    ("avx512vnni", {"avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx2", "fma", "f16c"}),
    ("avxvnni", {"avx_vnni", "avx2", "fma", "f16c"}),
    ("avx2", {"avx2", "fma", "f16c"}),
    ("baseline", set()),
)


def _cpuinfo_field(name: str, cpuinfo: Path) -> str | None:
    try:
        data = bounded.read_bytes(cpuinfo, bounded.SYSTEM_FILE)
    except OSError:
        return None
    lines = data.decode(errors="replace").splitlines()
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith(name)), None)


def cpu_flags(cpuinfo: Path = CPUINFO) -> set[str]:
    return set((_cpuinfo_field("flags", cpuinfo) or "").split())


def cpu_name(cpuinfo: Path = CPUINFO) -> str:
    return _cpuinfo_field("model name", cpuinfo) or platform.processor() or "CPU"


def kernel_isa(named: str | None = None, cpuinfo: Path = CPUINFO) -> str:
    """The variant the host library runs: ``named`` (STRATA_HOST_ISA) where the CPU has what
    it needs, else the best the CPU has, as the library itself decides (each variant by its
    own flags: an AVX-512 VNNI CPU may lack AVX-VNNI)."""
    flags = cpu_flags(cpuinfo)
    has = [name for name, needed in KERNEL_ISAS if needed <= flags]
    return named if named in has else has[0]


def isa_level(cpuinfo: Path = CPUINFO) -> str:
    machine = platform.machine()
    if machine not in ("x86_64", "AMD64"):
        return machine.lower()
    flags = cpu_flags(cpuinfo)
    level = "x86-64"
    for name, needed in reversed(_LEVELS):
        if not needed <= flags:
            break
        level = name
    return level


def blas_version() -> str:
    """numpy's version and its BLAS, as one token: numpy2.4.6-openblas0.3.31.188.0."""
    import numpy
    from threadpoolctl import threadpool_info

    blas = next((i for i in threadpool_info() if i.get("user_api") == "blas"), None)
    name = f"-{blas['internal_api']}{blas.get('version') or ''}" if blas else "-noblas"
    return f"numpy{numpy.__version__}{name}"
