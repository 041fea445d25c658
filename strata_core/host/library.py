"""The host kernel library, loaded through cffi in ABI mode from this package's folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import StrataError
from ..q8 import check_expert_shapes, check_matvec_shapes
from ._host_ffi import ffi as kernel_abi
from .loading import LIBRARY, load

#: each variant's code, as strata_kernels.h defines it (STRATA_TOPK_REGISTER, ...)
TOPK_VARIANTS = {
    name: kernel_abi.integer_const(f"STRATA_TOPK_{name.upper()}")
    for name in ("auto", "register", "wide", "old")
}
ROUTER_VARIANTS = {
    name: kernel_abi.integer_const(f"STRATA_ROUTER_{name.upper()}") for name in ("fast", "portable")
}


def _check(status: int, what: str) -> None:
    if status != 0:
        raise StrataError(f"host kernel {what} failed with status {status}")


def _contiguous(array: np.ndarray, dtype: Any) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=dtype)


class HostLibrary:
    """Typed numpy calls into libstrata_host; ``wait_policy`` is how OpenMP's idle threads
    wait (OMP_WAIT_POLICY), where this load starts OpenMP."""

    def __init__(self, path: Path = LIBRARY, wait_policy: str | None = None) -> None:
        self.ffi, self.lib = load(path, wait_policy)
        self.path = path
        self.operations = tuple(self.ffi.string(self.lib.strata_operations()).decode().split(","))
        self.isa = self.ffi.string(self.lib.strata_isa()).decode()

    def _buffer(self, ctype: str, array: np.ndarray) -> Any:
        return self.ffi.from_buffer(ctype, array)

    def set_isa(self, isa: str) -> None:
        """Run the kernels with this instruction set (the plan's choice)."""
        if self.lib.strata_set_isa(isa.encode()) != 0:
            raise StrataError(f"the host kernels cannot run {isa} on this CPU")
        self.isa = isa

    def set_threads(self, threads: int) -> int:
        return int(self.lib.strata_set_threads(threads))

    def keep(self, array: np.ndarray) -> np.ndarray:
        """The array itself: the host's kernels read it where it is."""
        return array

    def matvec_q8_0(
        self, qs: np.ndarray, d: np.ndarray, xq: np.ndarray, xd: np.ndarray
    ) -> np.ndarray:
        check_matvec_shapes(qs, d, xq, xd)
        rows, cols = qs.shape
        qs, xq = _contiguous(qs, np.int8), _contiguous(xq, np.int8)
        d, xd = _contiguous(d, np.float16).view(np.uint16), _contiguous(xd, np.float32)
        y = np.empty(rows, dtype=np.float32)
        _check(
            self.lib.strata_matvec_q8_0(
                self._buffer("int8_t[]", qs),
                self._buffer("uint16_t[]", d),
                self._buffer("int8_t[]", xq),
                self._buffer("float[]", xd),
                self._buffer("float[]", y),
                rows,
                cols,
            ),
            "matvec_q8_0",
        )
        return y

    def expert_matvec_q8_0(
        self, qs: np.ndarray, d: np.ndarray, ids: np.ndarray, xq: np.ndarray, xd: np.ndarray
    ) -> np.ndarray:
        """The MoE expert step: tokens x k x rows, each chosen expert's weights read once."""
        check_expert_shapes(qs, d, ids, xq, xd)
        experts, rows, cols = qs.shape
        tokens, k = ids.shape
        qs, xq = _contiguous(qs, np.int8), _contiguous(xq, np.int8)
        d, xd = _contiguous(d, np.float16).view(np.uint16), _contiguous(xd, np.float32)
        ids = _contiguous(ids, np.int32)
        y = np.empty((tokens, k, rows), dtype=np.float32)
        _check(
            self.lib.strata_expert_matvec_q8_0(
                self._buffer("int8_t[]", qs),
                self._buffer("uint16_t[]", d),
                self._buffer("int32_t[]", ids),
                self._buffer("int8_t[]", xq),
                self._buffer("float[]", xd),
                self._buffer("float[]", y),
                experts,
                tokens,
                k,
                rows,
                cols,
            ),
            "expert_matvec_q8_0",
        )
        return y

    def router_topk(
        self, logits: np.ndarray, k: int, variant: str = "fast"
    ) -> tuple[np.ndarray, np.ndarray]:
        logits = _contiguous(logits, np.float32)
        tokens, experts = logits.shape
        ids = np.empty((tokens, k), dtype=np.int32)
        weights = np.empty((tokens, k), dtype=np.float32)
        _check(
            self.lib.strata_router_topk(
                self._buffer("float[]", logits),
                tokens,
                experts,
                k,
                self._buffer("int32_t[]", ids),
                self._buffer("float[]", weights),
                ROUTER_VARIANTS[variant],
            ),
            "router_topk",
        )
        return ids, weights

    def topk(
        self, scores: np.ndarray, k: int, variant: str = "auto"
    ) -> tuple[np.ndarray, np.ndarray]:
        """The top k of each row of ``scores`` (queries x n, or one row), the rows on threads;
        ids and values in the shape of the rows, k a row."""
        scores = _contiguous(scores, np.float32)
        rows = scores.reshape(-1, scores.shape[-1])
        queries, n = rows.shape
        ids = np.empty((queries, k), dtype=np.int32)
        values = np.empty((queries, k), dtype=np.float32)
        _check(
            self.lib.strata_topk(
                self._buffer("float[]", rows),
                queries,
                n,
                n,
                k,
                self._buffer("int32_t[]", ids),
                self._buffer("float[]", values),
                TOPK_VARIANTS[variant],
            ),
            "topk",
        )
        shape = (*scores.shape[:-1], k)
        return ids.reshape(shape), values.reshape(shape)

    def topk_variant_for(self, cells: int, prompt_read: bool) -> str:
        code = self.lib.strata_topk_variant_for(cells, int(prompt_read))
        return next(name for name, value in TOPK_VARIANTS.items() if value == code)

    def read_bytes(self, buffer: np.ndarray) -> int:
        return int(self.lib.strata_read_bytes(self._buffer("char[]", buffer), buffer.nbytes))
