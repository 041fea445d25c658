"""The HIP kernels' logic, run on the CPU: native/gpu/strata_kernels.hip compiled with
tests/fixtures/hip_emulation.h (fibers for work-items, barriers for workgroups and logical
warps) and checked against the numpy references. This is the gfx103x/gfx906 source path (the
signed dot4, the FMA GEMM); nothing here ran on a GPU, and the WMMA GEMM is not emulated."""

import shutil
import subprocess
from pathlib import Path

import cffi
import expert_cases
import numpy as np
import pytest

from strata_core import q8
from strata_core.gpu.library import (
    EXPERT_ROWS,
    TOPK_WORDS,
    matvec_grid,
    matvec_split,
    router_grid,
    topk_launches,
    topk_scratch_bytes,
)
from strata_core.host import reference

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
BLOCK, WARPS, TILE, MATVEC_ROWS = 256, 8, 16, 2
TOPK_CODES = {"register": 1, "wide": 2, "old": 3}

CDEF = "\n".join(
    line
    for line in (FIXTURES / "hip_emulation_api.h").read_text().splitlines()
    if not line.startswith("#")
)


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    clang = shutil.which("clang-19")
    assert clang, "clang-19 is missing (Debian: apt-get install clang-19)"
    library = tmp_path_factory.mktemp("emu") / "libhip_emulation.so"
    subprocess.run(
        [clang, "-x", "c++", "-std=c++17", "-O1", "-shared", "-fPIC", "-fno-exceptions",
         "-fno-rtti", "-Wall", "-Werror", f"-I{ROOT / 'native/include'}",
         f"-I{ROOT / 'native/gpu'}", f"-I{FIXTURES}", str(FIXTURES / "hip_emulation.cpp"),
         "-o", str(library), "-lpthread"],
        check=True,
    )  # fmt: skip
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    return ffi, ffi.dlopen(str(library))


def _ptr(ffi, ctype, array):
    return ffi.from_buffer(ctype, array)


def _blocks(items, per_block):
    return -(-items // per_block)


@pytest.mark.parametrize("split", [1, 2, 4, 8])
@pytest.mark.parametrize(("rows", "cols"), [(100, 352), (9, 1280), (1, 32)])
def test_matvec_q8_0(emu, rows, cols, split):
    """Every row written, whichever split along K the grid gives the row groups (a grid of
    split warps a group of MATVEC_ROWS rows: the kernel reads the split from it)."""
    ffi, lib = emu
    rng = np.random.default_rng(rows)
    qs, d = q8.quantize_rows(rng.standard_normal((rows, cols), dtype=np.float32))
    xq, xd = q8.quantize_vector(rng.standard_normal(cols, dtype=np.float32))
    y = np.full(rows, np.nan, dtype=np.float32)
    lib.emu_matvec_q8_0(
        _blocks(_blocks(rows, MATVEC_ROWS) * split, WARPS), _ptr(ffi, "int8_t[]", qs),
        _ptr(ffi, "uint16_t[]", d.view(np.uint16)), _ptr(ffi, "int8_t[]", xq),
        _ptr(ffi, "float[]", xd), _ptr(ffi, "float[]", y), rows, cols,
    )  # fmt: skip
    want = reference.matvec_q8_0(qs, d, xq, xd)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize(
    ("rows", "cols", "split"),
    [(4096, 4096, 2), (4096, 14336, 2), (1024, 8192, 4), (14336, 4096, 1), (100, 352, 1)],
)
def test_matvec_splits_few_rows_along_k_keeping_two_blocks_a_lane(rows, cols, split):
    assert matvec_split(rows, cols) == split
    assert matvec_grid(rows, cols) == _blocks(_blocks(rows, MATVEC_ROWS) * split, WARPS)


@pytest.mark.parametrize(("experts", "tokens", "k", "rows", "cols", "kind"), expert_cases.CASES)
def test_expert_matvec_q8_0(emu, experts, tokens, k, rows, cols, kind):
    """Every pair's output written (from NaN) and equal to the reference; workgroups past the
    distinct experts write nothing."""
    ffi, lib = emu
    qs, d, ids, xq, xd = expert_cases.make(experts, tokens, k, rows, cols, kind)
    y = np.full((tokens, k, rows), np.nan, dtype=np.float32)
    lib.emu_expert_matvec_q8_0(
        min(experts, tokens * k) * _blocks(rows, EXPERT_ROWS), _ptr(ffi, "int8_t[]", qs),
        _ptr(ffi, "uint16_t[]", d.view(np.uint16)), _ptr(ffi, "int32_t[]", ids),
        _ptr(ffi, "int8_t[]", xq), _ptr(ffi, "float[]", xd), _ptr(ffi, "float[]", y),
        experts, tokens, k, rows, cols,
    )  # fmt: skip
    want = reference.expert_matvec_q8_0(qs, d, ids, xq, xd)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("split", [1, 2, 4, 8])
@pytest.mark.parametrize(
    ("experts", "tokens", "k", "rows", "cols"),
    [(8, 1, 2, 70, 96), (5, 1, 5, 37, 32), (16, 3, 4, 9, 64), (4, 1, 1, 1, 32)],
)
def test_expert_pairs_q8_0(emu, experts, tokens, k, rows, cols, split):
    """Where no expert is named twice, every pair's rows written (from NaN, an odd last group
    included) and equal to the reference, whichever split the grid gives the row groups."""
    ffi, lib = emu
    qs, d, _, xq, xd = expert_cases.make(experts, tokens, k, rows, cols, "router")
    rng = np.random.default_rng(experts)
    ids = rng.permutation(experts)[: tokens * k].reshape(tokens, k).astype(np.int32)
    y = np.full((tokens, k, rows), np.nan, dtype=np.float32)
    lib.emu_expert_pairs_q8_0(
        _blocks(tokens * k * _blocks(rows, MATVEC_ROWS) * split, WARPS),
        _ptr(ffi, "int8_t[]", qs), _ptr(ffi, "uint16_t[]", d.view(np.uint16)),
        _ptr(ffi, "int32_t[]", ids), _ptr(ffi, "int8_t[]", xq), _ptr(ffi, "float[]", xd),
        _ptr(ffi, "float[]", y), tokens * k, k, rows, cols,
    )  # fmt: skip
    want = reference.expert_matvec_q8_0(qs, d, ids, xq, xd)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def _logits(rng, tokens, experts, kind):
    if kind == "ties":
        return rng.integers(0, 4, (tokens, experts)).astype(np.float32)
    if kind == "zeros":  # -0 and +0 scattered, tying by id around the k-th pick
        logits = rng.choice(np.float32([1, 0, -1]), (tokens, experts), p=[0.05, 0.5, 0.45])
        return np.where((logits == 0) & (rng.random((tokens, experts)) < 0.5), -0.0, logits)
    logits = rng.standard_normal((tokens, experts), dtype=np.float32)
    if kind == "nan":
        logits[rng.random((tokens, experts)) < 0.1] = np.nan
        logits[0, :5] = -np.inf
    return logits


@pytest.mark.parametrize(
    ("variant", "warps"), [(0, 1), (0, 2), (1, 0)], ids=["fast", "fast-halves", "portable"]
)
@pytest.mark.parametrize(
    ("tokens", "experts", "k", "kind"),
    [
        (20, 128, 8, "normal"),
        (300, 40, 1, "normal"),
        (17, 64, 32, "ties"),
        (9, 96, 6, "nan"),
        (10, 200, 8, "nan"),  # eight experts a lane, or four a lane of two warps
        (7, 256, 32, "ties"),
        (5, 130, 20, "normal"),  # the second warp holds two experts
        (12, 300, 8, "ties"),  # more experts than the fast router holds in registers
        (9, 64, 8, "zeros"),
        (6, 200, 20, "zeros"),
        (5, 300, 32, "zeros"),
    ],
)
def test_router_topk(emu, variant, warps, tokens, experts, k, kind):
    """The reference's picks and weights, with a thread, a warp or (the grid giving two warps
    a token, where the library does so from 129 to 256 experts) two warps a token."""
    ffi, lib = emu
    logits = _logits(np.random.default_rng(tokens), tokens, experts, kind)
    ids = np.full((tokens, k), -1, dtype=np.int32)
    weights = np.full((tokens, k), np.nan, dtype=np.float32)
    grid = _blocks(tokens * warps, WARPS) if variant == 0 else _blocks(tokens, BLOCK)
    lib.emu_router_topk(
        grid, _ptr(ffi, "float[]", logits), tokens, experts, k, _ptr(ffi, "int32_t[]", ids),
        _ptr(ffi, "float[]", weights), variant,
    )  # fmt: skip
    want_ids, want_weights = reference.router_topk(logits, k)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(weights, want_weights, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    ("tokens", "experts", "warps"),
    [(100, 128, 1), (100, 129, 2), (1024, 256, 2), (1025, 256, 1), (100, 257, 1)],
)
def test_router_grid_gives_few_tokens_two_warps_from_129_to_256_experts(tokens, experts, warps):
    assert router_grid(tokens, experts, "fast") == _blocks(tokens * warps, WARPS)
    assert router_grid(tokens, experts, "portable") == _blocks(tokens, BLOCK)


def _topk(ffi, lib, scores, k, variant, n=None):
    """As GpuKernels.topk launches it: every stage over all rows (their first n cells), on
    poisoned outputs."""
    queries, stride = scores.shape
    n = n or stride
    ids = np.full((queries, k), -1, dtype=np.int32)
    values = np.full((queries, k), 7.0, dtype=np.float32)
    scratch = np.full(topk_scratch_bytes(queries, k) // 8, 0xA5A5A5A5A5A5A5A5, dtype=np.uint64)
    for stage, grid in topk_launches(queries, n, variant):
        lib.emu_topk(
            grid, _ptr(ffi, "float[]", scores), queries, n, stride, k, _ptr(ffi, "int32_t[]", ids),
            _ptr(ffi, "float[]", values), TOPK_CODES[variant], _ptr(ffi, "uint64_t[]", scratch),
            stage,
        )  # fmt: skip
    return ids, values, scratch


def _scores(rng, queries, n, kind):
    scores = rng.standard_normal((queries, n), dtype=np.float32)
    if kind == "ties":
        scores = np.round(scores * 2) / 2
    if kind == "nan":
        scores[rng.random((queries, n)) < 0.2] = np.nan
        scores[:, :7] = -np.inf
    return scores


def _counts(scratch, queries):
    """Each row's candidate count: the places its warps reserved less those they left unfilled
    (0 where the row was selected whole)."""
    words = scratch.view(np.uint32)[: queries * TOPK_WORDS].reshape(queries, TOPK_WORDS)
    return np.where(words[:, 1] == 0xFFFFFFFF, 0, words[:, 4] - words[:, 5])


def _assert_reference(scores, ids, values, k):
    for row, row_ids, row_values in zip(scores, ids, values, strict=True):
        want_ids, want_values = reference.topk(row, k)
        np.testing.assert_array_equal(row_ids, want_ids)
        np.testing.assert_array_equal(row_values, want_values)


@pytest.mark.parametrize("variant", ["register", "wide", "old"])
@pytest.mark.parametrize(
    ("queries", "n", "k", "kind", "filtered"),
    [(1, 1000, 1, "normal", False), (1, 5000, 64, "ties", True), (1, 70000, 256, "normal", True),
     (1, 3000, 1000, "nan", False), (1, 256, 256, "normal", False), (1, 40000, 100, "nan", True),
     (1, 300000, 2048, "ties", True), (1, 2048, 2048, "nan", False),
     (256, 8192, 4, "normal", True), (3, 9000, 1, "ties", True), (2, 30001, 64, "nan", True)],
)  # fmt: skip
def test_topk(emu, variant, queries, n, k, kind, filtered):
    """Ids and values as the reference gives them, every row; ``filtered`` says the register and
    the wide kernel selected among candidates for every row (not over the row), seen in their
    scratch."""
    ffi, lib = emu
    scores = _scores(np.random.default_rng(n + k), queries, n, kind)
    ids, values, scratch = _topk(ffi, lib, scores, k, variant)
    _assert_reference(scores, ids, values, k)
    if variant != "old":
        counts = _counts(scratch, queries)
        assert ((counts >= k) & (counts <= 16 * k + 4096)).all() == filtered


@pytest.mark.parametrize("variant", ["register", "wide", "old"])
def test_topk_reads_rows_at_their_stride(emu, variant):
    """Rows of 20,000 cells 20,003 apart: the cells past each row's n are never taken."""
    ffi, lib = emu
    scores = _scores(np.random.default_rng(3), 3, 20003, "normal")
    scores[:, 20000:] = 100.0
    ids, values, _ = _topk(ffi, lib, scores, 64, variant, n=20000)
    _assert_reference(scores[:, :20000], ids, values, 64)


@pytest.mark.parametrize("variant", ["register", "wide"])
def test_topk_selects_over_the_row_when_the_candidates_overflow(emu, variant):
    """A row whose top 40,000 cells tie leaves more candidates than the scratch holds: that row
    is selected in full, the other among its candidates, both as the reference gives them."""
    ffi, lib = emu
    scores = _scores(np.random.default_rng(5), 2, 70000, "normal")
    scores[1, 20000:60000] = 9.0
    ids, values, scratch = _topk(ffi, lib, scores, 256, variant)
    _assert_reference(scores, ids, values, 256)
    counts = _counts(scratch, 2)
    assert counts[0] <= 16 * 256 + 4096 < counts[1]


@pytest.mark.parametrize("variant", ["register", "wide"])
def test_topk_selects_by_id_among_candidates_of_one_score(emu, variant):
    """Rows whose 3,000 best cells tie, scattered over the row: every candidate has the row's
    key (the radix starts at the ids' bytes), and the k picks are the lowest ids of the tie."""
    ffi, lib = emu
    rng = np.random.default_rng(11)
    scores = _scores(rng, 2, 70000, "normal")
    for row in scores:
        row[rng.choice(70000, 3000, replace=False)] = 9.0
    ids, values, scratch = _topk(ffi, lib, scores, 256, variant)
    _assert_reference(scores, ids, values, 256)
    assert (_counts(scratch, 2) == 3000).all()


@pytest.mark.parametrize("variant", ["register", "wide", "old"])
@pytest.mark.parametrize(
    ("queries", "n", "k", "zeros"), [(1, 65536, 256, 3000), (256, 8192, 64, 600)]
)
def test_topk_ranks_minus_and_plus_zero_alike(emu, variant, queries, n, k, zeros):
    """Rows of k / 4 positive cells, then zeros of either sign scattered over negative cells,
    enough that the sample puts the key at zero: every zero is a candidate, and the k-th pick
    falls among the zeros, which tie by id whatever their sign, as in the reference."""
    ffi, lib = emu
    rng = np.random.default_rng(queries + zeros)
    scores = -1.0 - rng.random((queries, n), dtype=np.float32)
    for row in scores:
        chosen = rng.choice(n, k // 4 + zeros, replace=False)
        row[chosen[: k // 4]] = 1.0 + rng.random(k // 4, dtype=np.float32)
        row[chosen[k // 4 :]] = np.where(rng.random(zeros) < 0.5, -0.0, 0.0)
    ids, values, scratch = _topk(ffi, lib, scores, k, variant)
    _assert_reference(scores, ids, values, k)
    picked = np.take_along_axis(scores, ids, axis=1)
    np.testing.assert_array_equal(np.signbit(values), np.signbit(picked))
    if variant != "old":
        assert (_counts(scratch, queries) == k // 4 + zeros).all()


@pytest.mark.parametrize("variant", ["register", "wide"])
def test_topk_keeps_nan_at_a_key_of_minus_infinity(emu, variant):
    """A row of 50 finite cells, then NaN and -inf alternating: the sample puts the key at -inf,
    where NaN ranks too, so every cell is a candidate, and the picks after the 50 are the
    lowest ids of the NaN and -inf tie, as in the reference."""
    ffi, lib = emu
    scores = np.full((1, 8192), -np.inf, dtype=np.float32)
    scores[0, :50] = np.arange(50)
    scores[0, 50::2] = np.nan
    ids, values, scratch = _topk(ffi, lib, scores, 256, variant)
    _assert_reference(scores, ids, values, 256)
    assert _counts(scratch, 1)[0] == 8192


@pytest.mark.parametrize(("m", "n", "k"), [(40, 48, 72), (16, 16, 16), (5, 33, 100)])
def test_prompt_gemm_fma(emu, m, n, k):
    ffi, lib = emu
    rng = np.random.default_rng(m * n)
    a = rng.standard_normal((m, k)).astype(np.float16)
    w = rng.standard_normal((n, k)).astype(np.float16)
    c = np.full((m, n), np.nan, dtype=np.float32)
    lib.emu_prompt_gemm(
        _blocks(m, TILE) * _blocks(n, TILE), _ptr(ffi, "uint16_t[]", a.view(np.uint16)),
        _ptr(ffi, "uint16_t[]", w.view(np.uint16)), _ptr(ffi, "float[]", c), m, n, k,
    )  # fmt: skip
    want = a.astype(np.float32) @ w.astype(np.float32).T
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("grid", [1, 3])
def test_read_bytes_reads_every_word(emu, grid):
    """The fold of all words reaches the sink only when it is the kernel's constant: one word
    holding it and the rest zero show that every word was read, with any grid."""
    ffi, lib = emu
    words = 5000
    for where in (0, words - 1):
        buffer = np.zeros((words, 4), dtype=np.uint32)
        buffer[where, 2] = 0x9E3779B9
        sink = np.zeros(1, dtype=np.uint32)
        lib.emu_read_bytes(
            grid, _ptr(ffi, "uint32_t[]", buffer), words, _ptr(ffi, "uint32_t[]", sink)
        )
        assert sink[0] == 0x9E3779B9
    buffer[words - 1, 1] = 1
    sink[0] = 0
    lib.emu_read_bytes(grid, _ptr(ffi, "uint32_t[]", buffer), words, _ptr(ffi, "uint32_t[]", sink))
    assert sink[0] == 0
