"""The host's own top-k bands (bench/host_topk_bands.py measures them), and the engine's
switches, which the host honours where the user sets them."""

import pytest
from conftest import HOST_ISAS

from strata_core.api.kernels import topk_choice
from strata_core.host.topk_bands import HOST_TOPK_BANDS, host_topk_choice, host_topk_choices


def test_every_instruction_set_has_its_band():
    assert set(HOST_TOPK_BANDS) == set(HOST_ISAS)


@pytest.mark.parametrize("isa", HOST_ISAS)
@pytest.mark.parametrize("prompt_read", [False, True])
def test_the_wide_kernel_runs_from_the_band_edge(isa, prompt_read):
    band = HOST_TOPK_BANDS[isa]
    at_edge = host_topk_choice({}, isa, band.wide_from_cells, band.wide_from_k, prompt_read)
    assert at_edge.variant == "wide"
    assert f"the host's own band on {isa}" in at_edge.reason
    below = host_topk_choice({}, isa, band.wide_from_cells - 1, band.wide_from_k, prompt_read)
    assert below.variant == "register"
    if band.wide_from_k > 1:
        smaller_k = host_topk_choice({}, isa, 1 << 20, band.wide_from_k - 1, prompt_read)
        assert smaller_k.variant == "register"


def test_the_portable_code_keeps_the_heap_kernel_until_k_is_large():
    assert host_topk_choice({}, "baseline", 524_288, 256, False).variant == "register"
    assert host_topk_choice({}, "avx2", 524_288, 256, False).variant == "wide"


@pytest.mark.parametrize("isa", HOST_ISAS)
def test_the_users_switches_win_over_the_host_band(isa):
    old = host_topk_choices({"STRATA_TOPK_OLD": "1"}, isa, 131_072, 256)
    assert [c.variant for c in old] == ["old", "old"]
    stream = {"STRATA_TOPK_STREAM": "0"}
    decode, prompt = host_topk_choices(stream, isa, 100_000, 256)
    assert prompt.variant == "register" and "STRATA_TOPK_STREAM=0" in prompt.reason
    assert decode.reason == host_topk_choice({}, isa, 100_000, 256, False).reason
    past_the_band = host_topk_choice(stream, isa, 200_000, 2048, True)
    assert past_the_band == host_topk_choice({}, isa, 200_000, 2048, True)


@pytest.mark.parametrize("isa", HOST_ISAS)
@pytest.mark.parametrize(
    ("switches", "cells", "prompt_read"),
    [
        ({"STRATA_TOPK_OLD": "1"}, 131_072, False),
        ({"STRATA_TOPK_OLD": "1", "STRATA_TOPK_STREAM": "0"}, 100_000, True),
        ({"STRATA_TOPK_STREAM": "0"}, 90_000, True),
        ({"STRATA_TOPK_STREAM": "0"}, 135_000, True),
    ],
)
def test_a_switch_picks_the_same_top_k_on_the_host_as_on_the_gpu(isa, switches, cells, prompt_read):
    gpu = topk_choice(switches, cells, prompt_read)
    assert host_topk_choice(switches, isa, cells, 256, prompt_read) == gpu
    assert gpu.variant != topk_choice({}, cells, prompt_read).variant
