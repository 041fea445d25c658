"""What names a host tuning table: the CPU's x86-64 ISA level and the BLAS library version."""

from __future__ import annotations

import platform
from pathlib import Path

# x86-64 micro-architecture levels by the /proc/cpuinfo flags each adds (psABI).
_LEVELS = (
    ("x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}),
    ("x86-64-v3", {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}),
    ("x86-64-v2", {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"}),
)


def isa_level(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    machine = platform.machine()
    if machine not in ("x86_64", "AMD64"):
        return machine.lower()
    try:
        flags = next(
            (
                set(line.split(":", 1)[1].split())
                for line in cpuinfo.read_text().splitlines()
                if line.startswith("flags")
            ),
            set(),
        )
    except OSError:
        flags = set()
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
