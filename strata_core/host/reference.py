"""numpy references of every host kernel: what each must compute, written plainly."""

from __future__ import annotations

import numpy as np

from ..q8 import BLOCK


def matvec_q8_0(qs: np.ndarray, d: np.ndarray, xq: np.ndarray, xd: np.ndarray) -> np.ndarray:
    rows, cols = qs.shape
    blocks = cols // BLOCK
    dots = (
        qs.reshape(rows, blocks, BLOCK).astype(np.int32)
        * xq.reshape(1, blocks, BLOCK).astype(np.int32)
    ).sum(axis=2)
    scaled = dots.astype(np.float64) * d.astype(np.float64) * xd.astype(np.float64)
    y: np.ndarray = scaled.sum(axis=1)
    return y


def expert_matvec_q8_0(
    qs: np.ndarray, d: np.ndarray, ids: np.ndarray, xq: np.ndarray, xd: np.ndarray
) -> np.ndarray:
    """The MoE expert step: for each token and slot, expert ids[token, slot]'s matvec with the
    token's activations (tokens x k x rows). Each expert's block dot products for all its
    tokens are one float32 product, exact (integers below 2**24); the scales are applied in
    float64."""
    tokens, k = ids.shape
    _, rows, cols = qs.shape
    blocks = cols // BLOCK
    y = np.empty((tokens, k, rows))
    for expert in np.unique(ids):
        token, slot = np.nonzero(ids == expert)
        w = qs[expert].reshape(rows, blocks, BLOCK).transpose(1, 0, 2).astype(np.float32)
        x = xq[token].reshape(len(token), blocks, BLOCK).transpose(1, 2, 0).astype(np.float32)
        dots = (w @ x).astype(np.float64)  # blocks x rows x tokens
        scales = d[expert].astype(np.float64)
        y[token, slot] = np.einsum("brn,rb,nb->nr", dots, scales, xd[token].astype(np.float64))
    return y


def _order(values: np.ndarray) -> np.ndarray:
    """Indices by descending value, lower index first among equals; NaN counts as -inf."""
    keys = np.where(np.isnan(values), -np.inf, values)
    return np.lexsort((np.arange(keys.shape[-1]), -keys))


def topk(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best of one row, or of each row of a queries x n array."""
    if scores.ndim == 2:
        ids = np.stack([_order(row)[:k] for row in scores]).astype(np.int32)
        return ids, np.take_along_axis(scores, ids, axis=1)
    ids = _order(scores)[:k]
    return ids.astype(np.int32), scores[ids]


def router_topk(logits: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    ids = np.stack([_order(row)[:k] for row in logits]).astype(np.int32)
    picked = np.take_along_axis(np.where(np.isnan(logits), -np.inf, logits), ids, axis=1)
    weights = np.exp(picked - picked[:, :1])
    weights = np.where(np.isfinite(picked), weights, 0.0)
    return ids, (weights / weights.sum(axis=1, keepdims=True)).astype(np.float32)


def router_topk_numpy(logits: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """How a numpy program routes: argpartition, then sort the k, then softmax. The speed
    yardstick of bench/host_kernels.py (ties may order differently from the kernel)."""
    part = np.argpartition(logits, -k, axis=1)[:, -k:]
    vals = np.take_along_axis(logits, part, axis=1)
    order = np.argsort(-vals, axis=1)
    ids = np.take_along_axis(part, order, axis=1)
    vals = np.take_along_axis(vals, order, axis=1)
    weights = np.exp(vals - vals[:, :1])
    return ids, weights / weights.sum(axis=1, keepdims=True)
