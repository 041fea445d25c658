"""The kinds of tuning table: each format's library, magic line, columns and patterns
(docs/tuning-tables.md). Reading and writing a table is strata_core.tuning.tables."""

from __future__ import annotations

from typing import Any

import attrs

#: what an op name in a table looks like
OP_PATTERN = r"[a-z][a-z0-9_]*"


@attrs.frozen
class Kind:
    """One table format. ``key`` columns identify a shape; the rest are the outcome."""

    name: str
    library: str
    magic: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    arch_pattern: str
    version_pattern: str
    #: what a winner's solution id looks like
    solution_pattern: str = r"-?\d+"
    #: the variable that makes the engine take a table of this kind under any name
    variable: str | None = None

    def file_name(self, arch: str, version: str) -> str:
        return f"{arch}-{self.name}-{version.rstrip('.')}.txt"

    def key_for(self, tokens: int, n: int, k: int, dtype: str, op: str) -> tuple[Any, ...]:
        """The row key of a GEMM of ``tokens`` x ``k`` by ``n`` x ``k`` (rocBLAS: ldy = N)."""
        values = {"T": tokens, "N": n, "K": k, "dtype": dtype, "op": op, "ldy": n}
        return tuple(values[column] for column in self.key)


_GEMM_KEY = ("T", "N", "K", "dtype", "op")
_GEMM_COLUMNS = (*_GEMM_KEY, "solution", "default_us", "best_us")
HIPBLASLT = Kind(
    "hipblaslt",
    "hipBLASLt",
    "STRATA_HIPBLASLT_TUNING_V1",
    _GEMM_COLUMNS,
    _GEMM_KEY,
    r"gfx[0-9a-f]+",
    r"\d{5,6}",
    variable="STRATA_HIPBLASLT_TUNING",
)
ROCBLAS = Kind(
    "rocblas",
    "rocBLAS",
    "STRATA_ROCBLAS_TUNING_V1",
    ("T", "N", "K", "ldy", "solution", "default_us", "best_us"),
    ("T", "N", "K", "ldy"),
    r"gfx[0-9a-f]+",
    r"\d+\.\d+\.\d+\.[0-9a-f]*",
    variable="STRATA_ROCBLAS_TUNING",
)
HOST = Kind(
    "host",
    "host BLAS",
    "STRATA_HOST_TUNING_V1",
    _GEMM_COLUMNS,
    _GEMM_KEY,
    r"x86-64(-v[234])?|aarch64|\w+",
    r"\S+",
    OP_PATTERN,
)
#: cuBLASLt (NVIDIA): version as cublasLtGetVersion gives it (12.8.4 is 120804); a solution is
#: an algorithm configuration, algo:tile:stages:splitk:reduction:swizzle:custom:inner:cluster
CUBLASLT = Kind(
    "cublaslt",
    "cuBLASLt",
    "STRATA_CUBLASLT_TUNING_V1",
    _GEMM_COLUMNS,
    _GEMM_KEY,
    r"sm_\d+",
    r"\d{5,6}",
    r"\d+(:\d+){8}",
    variable="STRATA_CUBLASLT_TUNING",
)
KINDS = {kind.magic: kind for kind in (HIPBLASLT, ROCBLAS, HOST, CUBLASLT)}
