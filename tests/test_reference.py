"""The numpy references against their definitions written out in full: the top-k that puts
only candidates in order gives every row's whole order's first k, and the expert step that
reads each expert once for all its tokens gives each pair's plain matvec."""

import expert_cases
import numpy as np
import pytest

from strata_core.host import reference


def by_full_order(row: np.ndarray, k: int) -> np.ndarray:
    """The definition: every cell in order, descending value, lower index first among equals,
    NaN as -inf; the first k."""
    keys = np.where(np.isnan(row), -np.inf, row)
    return np.lexsort((np.arange(len(row)), -keys))[:k]


def rows_of(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "normal":
        return rng.standard_normal(n).astype(np.float32)
    if kind == "ascending":
        return np.arange(n, dtype=np.float32)
    if kind == "descending":
        return np.arange(n, dtype=np.float32)[::-1].copy()
    if kind == "all equal":
        return np.zeros(n, np.float32)
    if kind == "three values":
        return rng.integers(0, 3, n).astype(np.float32)
    if kind == "mostly NaN":
        row = rng.standard_normal(n).astype(np.float32)
        row[rng.random(n) < 0.9] = np.nan
        return row
    if kind.startswith("large every"):  # the best cells where a sample would look
        row = rng.random(n).astype(np.float32)
        every = int(kind.split()[-1])
        row[::every] += 2 + rng.random(len(row[::every])).astype(np.float32)
        return row
    row = np.full(n, -np.inf, np.float32)  # "mostly -inf": fewer finite cells than k
    row[:: max(1, n // 5)] = 1.0
    return row


KINDS = ["normal", "ascending", "descending", "all equal", "three values", "mostly NaN",
         "mostly -inf", "large every 2", "large every 3", "large every 16"]  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("n", "k"), [(131_072, 256), (200_000, 2048), (5000, 32), (300, 1),
                                      (64, 64), (524_288, 7)])  # fmt: skip
def test_topk_is_the_first_k_of_the_whole_order(kind, n, k):
    row = rows_of(kind, n, np.random.default_rng(n + k))
    ids, values = reference.topk(row, k)
    want = by_full_order(row, k)
    np.testing.assert_array_equal(ids, want)
    np.testing.assert_array_equal(values, row[want])


def test_topk_of_many_rows_is_each_rows(monkeypatch):
    """Rows shared among threads: each row's answer lands in its own place."""
    rng = np.random.default_rng(3)
    rows = np.stack([rows_of(kind, 20_000, rng) for kind in KINDS * 3])
    ids, values = reference.topk(rows, 100)
    for row, row_ids, row_values in zip(rows, ids, values, strict=True):
        np.testing.assert_array_equal(row_ids, by_full_order(row, 100))
        np.testing.assert_array_equal(row_values, row[row_ids])


def test_router_topk_orders_as_the_definition():
    rng = np.random.default_rng(5)
    logits = rng.integers(0, 4, (200, 128)).astype(np.float32)
    logits[0, 3] = np.nan
    logits[1, :100] = -np.inf
    ids, weights = reference.router_topk(logits, 8)
    for row, row_ids in zip(logits, ids, strict=True):
        np.testing.assert_array_equal(row_ids, by_full_order(row, 8))
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-6)


@pytest.mark.parametrize(("experts", "tokens", "k", "rows", "cols", "kind"), expert_cases.CASES)
def test_expert_step_is_each_pairs_matvec(experts, tokens, k, rows, cols, kind):
    """The grouped reference (each expert read once for all its tokens, in row slices) gives
    every (token, slot) the plain matvec's value."""
    qs, d, ids, xq, xd = expert_cases.make(experts, tokens, k, rows, cols, kind)
    got = reference.expert_matvec_q8_0(qs, d, ids, xq, xd)
    for token in range(0, tokens, max(1, tokens // 7)):
        for slot in range(k):
            expert = ids[token, slot]
            want = reference.matvec_q8_0(qs[expert], d[expert], xq[token], xd[token])
            np.testing.assert_allclose(got[token, slot], want, rtol=1e-12, atol=1e-12)


def test_expert_rows_past_one_slice():
    """More rows than a slice of ROW_SLICE: every slice's rows are computed."""
    qs, d, ids, xq, xd = expert_cases.make(2, 3, 1, reference.ROW_SLICE * 2 + 5, 64, "router")
    got = reference.expert_matvec_q8_0(qs, d, ids, xq, xd)
    for token in range(3):
        expert = ids[token, 0]
        want = reference.matvec_q8_0(qs[expert], d[expert], xq[token], xd[token])
        np.testing.assert_allclose(got[token, 0], want, rtol=1e-12, atol=1e-12)
