"""The host kernels against their numpy references, each test once on every instruction set
this CPU has (the portable code is the reference of behaviour)."""

import expert_cases
import numpy as np
import pytest
from conftest import BEST_HOST_ISA, CPU_HOST_ISAS, HOST_ISAS

from strata_core import q8
from strata_core.api.kernels import topk_choice
from strata_core.errors import StrataError
from strata_core.host import reference
from strata_core.host.library import HostLibrary


@pytest.fixture(scope="module", params=CPU_HOST_ISAS)
def lib(request):
    """The library running ``request.param``; the choice is the process's, so it is undone."""
    lib = HostLibrary()
    lib.set_isa(request.param)
    yield lib
    lib.set_isa(BEST_HOST_ISA)


def test_the_library_says_its_abi_and_operations(lib):
    assert lib.lib.strata_abi_version() == 6
    assert lib.operations == ("matvec_q8_0", "expert_matvec_q8_0", "router_topk", "topk")
    assert lib.isa in CPU_HOST_ISAS
    assert lib.ffi.string(lib.lib.strata_isa()).decode() == lib.isa
    assert lib.path.is_absolute() and lib.path.parent.name == "host"


def test_the_library_starts_with_the_best_instruction_set_of_the_cpu():
    """What the library chose at its first load (conftest) is what the plan reads from
    /proc/cpuinfo, and the best of those it runs."""
    from strata_core.host.platform import kernel_isa

    assert BEST_HOST_ISA == CPU_HOST_ISAS[-1] == kernel_isa()


def test_a_missing_library_is_one_clear_error(tmp_path):
    with pytest.raises(StrataError, match="the host kernel library is missing at"):
        HostLibrary(tmp_path / "libstrata_host.so")


@pytest.mark.parametrize(("rows", "cols"), [(1, 32), (37, 96), (64, 1024), (3, 4128), (130, 256)])
def test_matvec_q8_0(lib, rows, cols):
    rng = np.random.default_rng(rows * cols)
    qs, d = q8.quantize_rows(rng.standard_normal((rows, cols), dtype=np.float32))
    xq, xd = q8.quantize_vector(rng.standard_normal(cols, dtype=np.float32))
    expected = reference.matvec_q8_0(qs, d, xq, xd)
    np.testing.assert_allclose(
        lib.matvec_q8_0(qs, d, xq, xd), expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max()
    )


def test_matvec_extremes(lib):
    qs = np.full((4, 64), 127, dtype=np.int8)
    qs[1] = -127
    d = np.full((4, 2), 0.5, dtype=np.float16)
    xq = np.full(64, -127, dtype=np.int8)
    xd = np.array([1.0, 2.0], dtype=np.float32)
    np.testing.assert_allclose(
        lib.matvec_q8_0(qs, d, xq, xd), reference.matvec_q8_0(qs, d, xq, xd), rtol=1e-6
    )


def test_matvec_rejects_shapes_that_do_not_fit(lib):
    with pytest.raises(StrataError, match="do not fit together"):
        lib.matvec_q8_0(
            np.zeros((2, 64), np.int8),
            np.zeros((2, 2), np.float16),
            np.zeros(32, np.int8),
            np.zeros(1, np.float32),
        )


@pytest.mark.parametrize(("experts", "tokens", "k", "rows", "cols", "kind"), expert_cases.CASES)
def test_expert_matvec_q8_0(lib, experts, tokens, k, rows, cols, kind):
    qs, d, ids, xq, xd = expert_cases.make(experts, tokens, k, rows, cols, kind)
    expected = reference.expert_matvec_q8_0(qs, d, ids, xq, xd)
    got = lib.expert_matvec_q8_0(qs, d, ids, xq, xd)
    assert got.shape == (tokens, k, rows)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_expert_matvec_is_each_pairs_matvec(lib):
    """A pair's output is the plain matvec of its expert and token, to the bit."""
    qs, d, ids, xq, xd = expert_cases.make(8, 64, 2, 37, 160, "router")
    got = lib.expert_matvec_q8_0(qs, d, ids, xq, xd)
    for token, slot in [(0, 0), (17, 1), (63, 0)]:
        expert = ids[token, slot]
        want = lib.matvec_q8_0(qs[expert], d[expert], xq[token], xd[token])
        np.testing.assert_array_equal(got[token, slot], want)


def _expert_call(lib, qs, d, ids, xq, xd, *, experts, k, cols, null=False):
    ffi, tokens = lib.ffi, ids.shape[0]
    return lib.lib.strata_expert_matvec_q8_0(
        ffi.NULL if null else ffi.from_buffer("int8_t[]", qs),
        ffi.from_buffer("uint16_t[]", d.view(np.uint16)), ffi.from_buffer("int32_t[]", ids),
        ffi.from_buffer("int8_t[]", xq), ffi.from_buffer("float[]", xd),
        ffi.from_buffer("float[]", np.empty(ids.size * qs.shape[1], np.float32)),
        experts, tokens, k, qs.shape[1], cols,
    )  # fmt: skip


@pytest.mark.parametrize(
    "bad", ["id = experts", "id = -1", "k = 0", "no experts", "cols not of 32", "null"]
)
def test_expert_matvec_refuses_bad_arguments(lib, bad):
    qs, d, ids, xq, xd = expert_cases.make(4, 2, 2, 8, 64, "router")
    args = {"experts": 4, "k": 2, "cols": 64}
    if bad == "id = experts":
        ids[1, 1] = 4
    elif bad == "id = -1":
        ids[0, 0] = -1
    elif bad == "k = 0":
        args["k"] = 0
    elif bad == "no experts":
        args["experts"] = 0
    elif bad == "cols not of 32":
        args["cols"] = 63
    assert _expert_call(lib, qs, d, ids, xq, xd, null=bad == "null", **args) == -1


def test_expert_matvec_refuses_ids_and_shapes_that_do_not_fit(lib):
    qs, d, ids, xq, xd = expert_cases.make(4, 2, 2, 8, 64, "router")
    ids[0, 1] = 4
    with pytest.raises(StrataError, match="an expert id is outside 0..3"):
        lib.expert_matvec_q8_0(qs, d, ids, xq, xd)
    with pytest.raises(StrataError, match="do not fit together"):
        lib.expert_matvec_q8_0(qs, d, ids[:1], xq, xd)


@pytest.mark.parametrize("variant", ["auto", "register", "wide", "old"])
@pytest.mark.parametrize(
    ("n", "k"), [(300, 1), (1000, 64), (100_000, 256), (524_288, 256), (200_000, 1024)]
)
def test_topk(lib, variant, n, k):
    rng = np.random.default_rng(n + k)
    scores = rng.standard_normal(n, dtype=np.float32)
    scores[::97] = scores[5]  # ties: the lower index first
    scores[13] = np.nan  # NaN counts as the smallest
    ids, values = lib.topk(scores, k, variant)
    expected_ids, expected_values = reference.topk(scores, k)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_array_equal(values, expected_values)


@pytest.mark.parametrize("variant", ["register", "wide", "old"])
@pytest.mark.parametrize(
    ("queries", "n", "k"), [(256, 4096, 64), (3, 2048, 2048), (1, 150_000, 2048), (256, 300, 1)]
)
def test_topk_of_many_rows(lib, variant, queries, n, k):
    """Each row as the reference selects it: ties to the lower id, NaN smallest, k = n."""
    rng = np.random.default_rng(queries + n + k)
    scores = np.round(rng.standard_normal((queries, n), dtype=np.float32) * 4) / 4
    scores[rng.random((queries, n)) < 0.05] = np.nan
    ids, values = lib.topk(scores, k, variant)
    assert ids.shape == values.shape == (queries, k)
    for row, row_ids, row_values in zip(scores, ids, values, strict=True):
        want_ids, want_values = reference.topk(row, k)
        np.testing.assert_array_equal(row_ids, want_ids)
        np.testing.assert_array_equal(row_values, want_values)


def test_topk_reads_rows_at_their_stride(lib):
    """The C entry point over rows of 3,000 cells 3,005 apart: cells past n are never taken."""
    rng = np.random.default_rng(7)
    scores = rng.standard_normal((4, 3005), dtype=np.float32)
    scores[:, 3000:] = 100.0
    ids = np.full((4, 16), -1, np.int32)
    values = np.full((4, 16), np.nan, np.float32)
    out = (lib.ffi.from_buffer("int32_t[]", ids), lib.ffi.from_buffer("float[]", values))
    rows = lib.ffi.from_buffer("float[]", scores)
    assert lib.lib.strata_topk(rows, 4, 3000, 3005, 16, *out, 1) == 0
    for row, row_ids in zip(scores, ids, strict=True):
        np.testing.assert_array_equal(row_ids, reference.topk(row[:3000], 16)[0])
    assert lib.lib.strata_topk(rows, 4, 3005, 3000, 16, *out, 1) == -1  # stride under a row


@pytest.mark.parametrize("prompt_read", [False, True])
@pytest.mark.parametrize("cells", [1000, 89_999, 90_000, 131_072, 135_000, 135_001, 524_288])
def test_the_host_library_bands_are_the_plans(lib, cells, prompt_read):
    """AMD_HIP.md: "Past about 135K cells (and from about 90K cells on a prompt read) the
    top-k selection runs the wide kernel"; the C library's own band agrees with the plan's."""
    plan = topk_choice({}, cells, prompt_read).variant
    assert lib.topk_variant_for(cells, prompt_read) == plan
    assert plan == ("wide" if cells > 135_000 or (prompt_read and cells >= 90_000) else "register")


@pytest.mark.parametrize("variant", ["register", "wide", "old"])
@pytest.mark.parametrize("k", [5, 700])
def test_topk_where_most_scores_are_nan_or_minus_infinity(lib, variant, k):
    """The k-th best is -inf: NaN (counted as -inf) and -inf tie, the lower index first."""
    scores = np.full(200_000, np.nan, dtype=np.float32)
    scores[1::3] = -np.inf
    scores[::50_000] = np.arange(4, dtype=np.float32)
    ids, values = lib.topk(scores, k, variant)
    expected_ids, expected_values = reference.topk(scores, k)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_array_equal(values, expected_values)


def test_topk_rejects_k_larger_than_n(lib):
    with pytest.raises(StrataError, match="topk failed with status -1"):
        lib.topk(np.zeros(4, np.float32), 5)


@pytest.mark.parametrize("variant", ["fast", "portable"])
@pytest.mark.parametrize(
    ("tokens", "experts", "k"),
    [(512, 128, 8), (37, 64, 6), (1, 256, 8), (100, 128, 12), (17, 8, 8), (64, 40, 16),
     (50, 10, 3)],
)  # fmt: skip
def test_router_topk(lib, variant, tokens, experts, k):
    rng = np.random.default_rng(tokens * experts + k)
    logits = rng.standard_normal((tokens, experts), dtype=np.float32)
    logits[0, 3] = np.nan
    if tokens > 2:
        logits[1] = logits[1, 0]  # all equal: ids in order, equal weights
        logits[2, : experts // 2] = -np.inf
    ids, weights = lib.router_topk(logits, k, variant)
    expected_ids, expected_weights = reference.router_topk(logits, k)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("variant", ["fast", "portable"])
@pytest.mark.parametrize("levels", [3, 40])
def test_router_topk_with_many_equal_logits(lib, variant, levels):
    """Few distinct values: more than sixteen logits tie at the bound of the fast router."""
    logits = np.random.default_rng(levels).integers(0, levels, (200, 128)).astype(np.float32)
    ids, weights = lib.router_topk(logits, 8, variant)
    expected_ids, expected_weights = reference.router_topk(logits, 8)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-5, atol=1e-7)


LACKED = [isa for isa in HOST_ISAS if isa not in CPU_HOST_ISAS]


@pytest.mark.parametrize("isa", LACKED or ["none: this CPU has every one"])
def test_an_instruction_set_the_cpu_lacks_is_refused(isa):
    if not LACKED:
        pytest.skip(f"this CPU runs every instruction set ({', '.join(CPU_HOST_ISAS)})")
    with pytest.raises(StrataError, match=f"^the host kernels cannot run {isa} on this CPU$"):
        HostLibrary().set_isa(isa)


def test_an_unknown_instruction_set_is_refused(lib):
    with pytest.raises(StrataError, match="^the host kernels cannot run avx9 on this CPU$"):
        lib.set_isa("avx9")
