"""Opening the library of a prompt GEMM path on a card's runtime."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..tuning.libraries import PATHS
from .gemm import BlasGemm
from .lt import CUBLASLT_API, HIPBLASLT_API, LtGemm
from .rocblas import RocblasGemm


def open_blas(path: str, files: Sequence[str], runtime: Any) -> BlasGemm:
    """The library of prompt GEMM path ``path``, loaded from the first of ``files`` that
    loads, on the runtime's current device. StrataError when none loads."""
    chosen = PATHS[path]
    if chosen.library == "rocblas":
        return RocblasGemm(files, runtime, chosen.dtype)
    return LtGemm(CUBLASLT_API if chosen.library == "cublaslt" else HIPBLASLT_API, files, runtime)
