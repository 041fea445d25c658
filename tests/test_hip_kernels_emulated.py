"""The HIP kernels' logic, run on the CPU: native/hip/strata_kernels.hip compiled with
tests/fixtures/hip_emulation.h (threads for work-items, barriers for workgroups and logical
warps) and checked against the numpy references. This is the gfx103x/gfx906 source path (the
signed dot4, the FMA GEMM); nothing here ran on a GPU, and the WMMA GEMM is not emulated."""

import shutil
import subprocess
from pathlib import Path

import cffi
import numpy as np
import pytest

from strata_core.hip.library import compose_picks, topk_stages
from strata_core.host import q8, reference

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
BLOCK, WARPS, TILE, MATVEC_ROWS = 256, 8, 16, 2

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
         f"-I{ROOT / 'native/hip'}", f"-I{FIXTURES}", str(FIXTURES / "hip_emulation.cpp"),
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


@pytest.mark.parametrize(("rows", "cols"), [(100, 352), (9, 1280), (1, 32)])
def test_matvec_q8_0(emu, rows, cols):
    ffi, lib = emu
    rng = np.random.default_rng(rows)
    qs, d = q8.quantize_rows(rng.standard_normal((rows, cols), dtype=np.float32))
    xq, xd = q8.quantize_vector(rng.standard_normal(cols, dtype=np.float32))
    y = np.full(rows, np.nan, dtype=np.float32)
    lib.emu_matvec_q8_0(
        _blocks(rows, WARPS * MATVEC_ROWS), _ptr(ffi, "int8_t[]", qs),
        _ptr(ffi, "uint16_t[]", d.view(np.uint16)), _ptr(ffi, "int8_t[]", xq),
        _ptr(ffi, "float[]", xd), _ptr(ffi, "float[]", y), rows, cols,
    )  # fmt: skip
    want = reference.matvec_q8_0(qs, d, xq, xd)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def _logits(rng, tokens, experts, kind):
    if kind == "ties":
        return rng.integers(0, 4, (tokens, experts)).astype(np.float32)
    logits = rng.standard_normal((tokens, experts), dtype=np.float32)
    if kind == "nan":
        logits[rng.random((tokens, experts)) < 0.1] = np.nan
        logits[0, :5] = -np.inf
    return logits


@pytest.mark.parametrize("variant", [0, 1], ids=["fast", "portable"])
@pytest.mark.parametrize(
    ("tokens", "experts", "k", "kind"),
    [
        (20, 128, 8, "normal"),
        (300, 40, 1, "normal"),
        (17, 64, 32, "ties"),
        (9, 96, 6, "nan"),
        (10, 200, 8, "nan"),  # eight experts a lane
        (12, 300, 8, "ties"),
    ],  # more experts than the fast router holds in registers
)
def test_router_topk(emu, variant, tokens, experts, k, kind):
    ffi, lib = emu
    logits = _logits(np.random.default_rng(tokens), tokens, experts, kind)
    ids = np.full((tokens, k), -1, dtype=np.int32)
    weights = np.full((tokens, k), np.nan, dtype=np.float32)
    grid = _blocks(tokens, WARPS if variant == 0 else BLOCK)
    lib.emu_router_topk(
        grid, _ptr(ffi, "float[]", logits), tokens, experts, k, _ptr(ffi, "int32_t[]", ids),
        _ptr(ffi, "float[]", weights), variant,
    )  # fmt: skip
    want_ids, want_weights = reference.router_topk(logits, k)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(weights, want_weights, rtol=1e-5, atol=1e-7)


def _topk_in_stages(ffi, lib, scores, k):
    """As GpuKernels.topk launches it: stage after stage on the last one's picks."""
    source, stage_ids = scores, []
    for grid in topk_stages(scores.size, k):
        ids = np.full(grid * k, -1, dtype=np.int32)
        values = np.full(grid * k, np.nan, dtype=np.float32)
        lib.emu_topk(
            grid, _ptr(ffi, "float[]", source), source.size, k, _ptr(ffi, "int32_t[]", ids),
            _ptr(ffi, "float[]", values),
        )  # fmt: skip
        stage_ids.append(ids)
        source = values
    return compose_picks(stage_ids), source


@pytest.mark.parametrize(
    ("n", "k", "kind", "stages"),
    [(1000, 1, "normal", 1), (5000, 64, "ties", 1), (70000, 256, "normal", 2),
     (3000, 1000, "nan", 1), (256, 256, "normal", 1), (20000, 64, "ties", 2),
     (40000, 100, "nan", 2), (300000, 1000, "ties", 3), (9000, 1024, "normal", 2)],
)  # fmt: skip
def test_topk(emu, n, k, kind, stages):
    ffi, lib = emu
    rng = np.random.default_rng(n)
    scores = rng.standard_normal(n, dtype=np.float32)
    if kind == "ties":
        scores = np.round(scores * 2) / 2
    if kind == "nan":
        scores[rng.random(n) < 0.2] = np.nan
        scores[:7] = -np.inf
    assert len(topk_stages(n, k)) == stages
    ids, values = _topk_in_stages(ffi, lib, scores, k)
    want_ids, want_values = reference.topk(scores, k)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(values, want_values)


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
