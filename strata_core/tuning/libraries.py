"""The vendor BLAS libraries the prompt GEMM paths run through, as tuning reads them: each
library's table kind, the variable that names its file and the sonames tried otherwise; each
path's library, operand type and table. Opening a library is strata_core.blas's."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ..api import arch
from ..library_search import candidates
from .kinds import CUBLASLT, HIPBLASLT, ROCBLAS, Kind


@attrs.frozen
class BlasLibrary:
    """A library a prompt GEMM path runs through: its table kind, the variable that names
    its file, the sonames tried otherwise, and whether it is a ROCm library (also looked for
    under $ROCM_PATH/lib and /opt/rocm/lib)."""

    kind: Kind
    variable: str
    sonames: tuple[str, ...]
    rocm: bool

    def files(self, env: Mapping[str, str]) -> tuple[str, ...]:
        """The file the variable names, else each soname (and, for a ROCm library, under
        $ROCM_PATH/lib and /opt/rocm/lib)."""
        if self.rocm:
            return tuple(candidates(env, self.variable, self.sonames))
        return (env[self.variable],) if env.get(self.variable) else self.sonames


LIBRARIES = {
    "hipblaslt": BlasLibrary(
        HIPBLASLT,
        "STRATA_HIPBLASLT_LIBRARY",
        ("libhipblaslt.so.1", "libhipblaslt.so.0", "libhipblaslt.so"),
        rocm=True,
    ),
    "rocblas": BlasLibrary(
        ROCBLAS,
        "STRATA_ROCBLAS_LIBRARY",
        ("librocblas.so.5", "librocblas.so.4", "librocblas.so"),
        rocm=True,
    ),
    "cublaslt": BlasLibrary(
        CUBLASLT,
        "STRATA_CUBLASLT_LIBRARY",
        ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"),
        rocm=False,
    ),
}


@attrs.frozen
class GemmPath:
    """How a prompt GEMM path of a plan runs on a card: the library, the operand type, and
    the plan's table decision it takes (None: it takes no table)."""

    library: str
    dtype: str
    table: str | None


#: AMD_HIP.md: plain hipBLAS (on AMD cards hipBLAS is rocBLAS underneath: "hipBLAS (rocBLAS
#: with gfx906 kernels)"), or hipBLASLt with its table; rocBLAS on gfx103x, its table for the
#: FP16 route; SGEMM widens both inputs. On NVIDIA cards, cuBLASLt.
PATHS = {
    "cublaslt": GemmPath("cublaslt", "f16", "cublaslt"),
    "hipblas": GemmPath("rocblas", "f16", None),
    "hipblaslt": GemmPath("hipblaslt", "f16", "hipblaslt"),
    "hipblas-sgemm": GemmPath("rocblas", "f32", None),
    "rocblas": GemmPath("rocblas", "f16", None),
    "rocblas-f16": GemmPath("rocblas", "f16", "rocblas"),
    "rocblas-f16+sgemm": GemmPath("rocblas", "f16", "rocblas"),
    "rocblas-sgemm": GemmPath("rocblas", "f32", None),
}


def calibrated_path(path: str, record: arch.ArchRecord | None) -> str | None:
    """The path whose library a card's tuning table serves, for a plan's path on a card of
    ``record``: hipBLASLt where the card takes a hipBLASLt table (plain hipBLAS becomes hipBLASLt
    with one), rocBLAS's FP16 route where it takes a rocBLAS table (gfx103x), cuBLASLt; None
    where the card takes no table."""
    library = record.table_library if record else None
    if path == "cublaslt":
        return path
    if path in ("hipblas", "hipblaslt") and library == arch.HIPBLASLT:
        return "hipblaslt"
    if path.startswith("rocblas") and library == arch.ROCBLAS:
        return "rocblas-f16"
    return None


def library_paths(path: str, env: Mapping[str, str]) -> tuple[str, ...]:
    """The files a prompt GEMM path's library is loaded from, in order; none for a path the
    kernel library runs (STRATA_PF_GEMM's WMMA GEMM)."""
    if path not in PATHS:
        return ()
    return LIBRARIES[PATHS[path].library].files(env)
