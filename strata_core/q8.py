"""Q8_0 quantization in numpy, the kernel ABI's weight format for every backend: 32-value
blocks, each int8 values times one scale."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .errors import StrataError

BLOCK = 32


def quantize_rows(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """W[rows, cols] -> (qs int8 [rows, cols], d float16 [rows, cols / 32]), d = max|block|/127."""
    rows, cols = w.shape
    if cols % BLOCK:
        raise ValueError(f"Q8_0 needs a multiple of {BLOCK} columns, got {cols}")
    blocks = np.asarray(w, dtype=np.float32).reshape(rows, cols // BLOCK, BLOCK)
    d = (np.abs(blocks).max(axis=2) / 127.0).astype(np.float16)
    scale = d.astype(np.float32)[..., None]
    qs = np.rint(np.divide(blocks, scale, out=np.zeros_like(blocks), where=scale > 0))
    return np.clip(qs, -127, 127).astype(np.int8).reshape(rows, cols), d


def quantize_vector(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x[cols] -> (xq int8 [cols], xd float32 [cols / 32])."""
    qs, d = quantize_rows(np.asarray(x, dtype=np.float32)[None, :])
    return qs[0], d[0].astype(np.float32)


class Shaped(Protocol):
    """What the shape checks read of weights: a numpy array's, or those of a copy on a card."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def ndim(self) -> int: ...


def check_matvec_shapes(qs: Shaped, d: Shaped, xq: Shaped, xd: Shaped) -> None:
    """Refuse weights, scales and activations that are not one Q8_0 matrix-vector product."""
    rows, cols = qs.shape
    fits = cols % BLOCK == 0 and d.shape == (rows, cols // BLOCK)
    if not fits or xq.shape != (cols,) or xd.shape != (cols // BLOCK,):
        raise StrataError(
            f"matvec_q8_0: shapes {qs.shape}, {d.shape}, {xq.shape}, {xd.shape} do not fit together"
        )


def check_expert_shapes(qs: Shaped, d: Shaped, ids: np.ndarray, xq: Shaped, xd: Shaped) -> None:
    """Refuse experts' weights and scales, the router's ids (tokens x k, each naming one of
    the experts) and per-token activations that are not one MoE expert step."""
    shapes = f"{qs.shape}, {d.shape}, {ids.shape}, {xq.shape}, {xd.shape}"
    if qs.ndim != 3 or ids.ndim != 2 or xq.ndim != 2:
        raise StrataError(f"expert_matvec_q8_0: shapes {shapes} do not fit together")
    experts, rows, cols = qs.shape
    tokens, k = ids.shape
    fits = (
        experts > 0 and k > 0 and cols % BLOCK == 0 and d.shape == (experts, rows, cols // BLOCK)
        and xq.shape == (tokens, cols) and xd.shape == (tokens, cols // BLOCK)
    )  # fmt: skip
    if not fits:
        raise StrataError(f"expert_matvec_q8_0: shapes {shapes} do not fit together")
    if ids.size and (ids.min() < 0 or ids.max() >= experts):
        raise StrataError(f"expert_matvec_q8_0: an expert id is outside 0..{experts - 1}")
