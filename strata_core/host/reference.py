"""numpy references of every host kernel: what each must compute, written plainly."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..q8 import BLOCK

#: rows of an expert's weights converted to float32 at a time: a slice that stays in the
#: CPU's cache while its block dot products are taken
ROW_SLICE = 64
#: cells of a top-k's sample for each of the k (the sample sets the candidates' bar)
SAMPLE_PER_K = 32


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
    token's activations (tokens x k x rows). Each expert named is read once for all the
    tokens that chose it, on every core."""
    tokens, k = ids.shape
    rows = qs.shape[1]
    y = np.empty((tokens, k, rows))

    def one(expert: int) -> None:
        token, slot = np.nonzero(ids == expert)
        y[token, slot] = expert_rows(qs[expert], d[expert], xq[token], xd[token])

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        list(pool.map(one, np.unique(ids)))
    return y


def expert_rows(qs: np.ndarray, d: np.ndarray, xq: np.ndarray, xd: np.ndarray) -> np.ndarray:
    """One Q8_0 matrix (rows x cols) times each of ``n`` activation rows (n x rows). Every
    32-value block's dot product is exact (integers below 2**24 in float32); the scales are
    applied to it in float64."""
    rows, cols = qs.shape
    blocks, n = cols // BLOCK, len(xq)
    x = xq.reshape(n, blocks, BLOCK).transpose(1, 2, 0).astype(np.float32)  # block, lane, token
    xd64 = xd.astype(np.float64)
    y = np.empty((n, rows))
    for start in range(0, rows, ROW_SLICE):
        part = slice(start, start + ROW_SLICE)
        w = qs[part].reshape(-1, blocks, BLOCK).transpose(1, 0, 2).astype(np.float32)
        dots = np.matmul(w, x)  # block, row, token
        y[:, part] = np.einsum("brn,rb,nb->nr", dots, d[part].astype(np.float64), xd64)
    return y


def _top(rows: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best of each of ``rows`` (rows x n): descending value, lower index
    first among equals, NaN counted as -inf. Only the candidates of each row are put in
    order; the rows are shared among the cores."""
    ids = np.empty((len(rows), k), np.int32)

    def some(part: range) -> None:
        for row in part:
            keys = _keys(rows[row])
            candidates = _candidates(keys, k)
            ids[row] = candidates[np.lexsort((candidates, -keys[candidates]))[:k]]

    cores = os.cpu_count() or 1
    with ThreadPoolExecutor(cores) as pool:
        list(pool.map(some, (range(start, len(rows), cores) for start in range(cores))))
    return ids


def _candidates(keys: np.ndarray, k: int) -> np.ndarray:
    """The cells at or above a bar that at least k cells reach, so that the k best are among
    them: the bar is taken from every step-th cell, where the row is long enough for a
    sample to leave few candidates, else it is the k-th best value itself (a partition)."""
    n = len(keys)
    step = n // (SAMPLE_PER_K * k)
    if step >= 2:
        sample = np.sort(keys[::step])
        candidates = np.flatnonzero(keys >= sample[-min(len(sample), 2 * k // step + 8)])
        if len(candidates) >= k:
            return candidates
    return np.flatnonzero(keys >= np.partition(keys, n - k)[n - k])


def _keys(values: np.ndarray) -> np.ndarray:
    """The values as the kernels order them: NaN counts as -inf."""
    nan = np.isnan(values)
    return np.where(nan, -np.inf, values) if nan.any() else values


def topk(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best of one row, or of each row of a queries x n array."""
    ids = _top(np.atleast_2d(scores), k)
    if scores.ndim == 2:
        return ids, np.take_along_axis(scores, ids, axis=1)
    return ids[0], scores[ids[0]]


def router_topk(logits: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    ids = _top(logits, k)
    picked = np.take_along_axis(_keys(logits), ids, axis=1)
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
