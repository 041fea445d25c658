"""What every BLAS binding offers the GPU run and calibration: the prompt GEMM
Y[T, N] = X[T, K] @ W[N, K]^T with half inputs and float output, run with the library's
default or with one named solution, and the solutions the library lists for a shape."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from ..tuning.kinds import Kind

#: workspace a Lt library may use for one GEMM (what cuBLAS asks for on Hopper: 32 MiB)
WORKSPACE_BYTES = 32 << 20


@attrs.frozen
class GemmShape:
    """T tokens by K inputs, times N x K weights: T x N outputs."""

    tokens: int
    n: int
    k: int

    def __str__(self) -> str:
        return f"T={self.tokens} N={self.n} K={self.k}"


class BlasGemm(Protocol):
    """One library on one card; ``DEFAULT`` (the library's own choice) is never refused."""

    library: str
    kind: Kind
    path: str
    version: str
    #: the operand type the GEMM takes (f16, or f32 for the SGEMM routes)
    dtype: str

    def solutions(self, shape: GemmShape) -> Sequence[str]:
        """``DEFAULT`` first, then every other solution the library lists for the shape."""

    def launcher(
        self, shape: GemmShape, solution: str, x: int, w: int, y: int, stream: int
    ) -> Callable[[], None]:
        """What queues the GEMM on ``stream`` over device addresses ``x``, ``w`` and ``y``,
        with every argument made beforehand, so that a timed launch is the library's call
        alone. It, or making it, raises SolutionRefused where the library refuses."""

    def close(self) -> None: ...
