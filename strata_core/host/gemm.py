"""The host backend's prompt GEMM, Y[T, N] = X[T, K] @ W[K, N], through numpy's BLAS.

The solutions are ways of calling BLAS for the same product, which calibration measures
against each other; ``default`` is one matmul.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from ..tuning.kinds import HOST

SOLUTIONS = {
    "default": "one matmul of X by W (K x N)",
    "wt": "W kept transposed (N x K), read by BLAS as the transposed operand",
    "split_n": "two matmuls, each over half of N",
    "chunk_t": "matmuls over 512-row chunks of X",
    "one_thread": "one matmul with BLAS on one thread",
}
T_CHUNK = 512


class PromptGemm:
    """One weight matrix and every way of multiplying by it."""

    #: relative tolerance of a result against :meth:`expected`
    tolerance = 1e-4

    def __init__(self, w: np.ndarray) -> None:
        self.w = np.ascontiguousarray(w, dtype=np.float32)
        self._wt: np.ndarray | None = None

    @property
    def wt(self) -> np.ndarray:
        if self._wt is None:
            self._wt = np.ascontiguousarray(self.w.T)
        return self._wt

    def expected(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, dtype=np.float32) @ self.w

    def table_key(self, tokens: int) -> tuple[Any, ...]:
        k, n = self.w.shape
        return HOST.key_for(tokens, n, k, "f32", "prompt")

    def __call__(self, x: np.ndarray, solution: str = "default") -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        if solution == "default":
            return x @ self.w
        if solution == "wt":
            y: np.ndarray = x @ self.wt.T
            return y
        if solution == "split_n":
            half = self.w.shape[1] // 2
            out = np.empty((x.shape[0], self.w.shape[1]), dtype=np.float32)
            np.matmul(x, self.w[:, :half], out=out[:, :half])
            np.matmul(x, self.w[:, half:], out=out[:, half:])
            return out
        if solution == "chunk_t":
            out = np.empty((x.shape[0], self.w.shape[1]), dtype=np.float32)
            for start in range(0, x.shape[0], T_CHUNK):
                np.matmul(x[start : start + T_CHUNK], self.w, out=out[start : start + T_CHUNK])
            return out
        if solution == "one_thread":
            with threadpool_limits(limits=1, user_api="blas"):
                return x @ self.w
        raise ValueError(f"unknown host GEMM solution {solution!r}")
