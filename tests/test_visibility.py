import pytest

from strata_core.detect.visibility import (
    cuda_visible_devices,
    override_for,
    parse_override,
    visible_devices,
)

UUIDS = ["aaaa000000000001", "bbbb000000000002", None]


@pytest.mark.parametrize(
    ("env", "order", "hidden"),
    [
        ({}, (0, 1, 2), set()),
        ({"ROCR_VISIBLE_DEVICES": "1"}, (1,), {0, 2}),
        ({"ROCR_VISIBLE_DEVICES": "2,0"}, (2, 0), {1}),
        ({"ROCR_VISIBLE_DEVICES": "GPU-bbbb000000000002,0"}, (1, 0), {2}),
        ({"ROCR_VISIBLE_DEVICES": "0,7,1"}, (0,), {1, 2}),  # the first invalid token ends it
        ({"ROCR_VISIBLE_DEVICES": "GPU-XX"}, (), {0, 1, 2}),
        ({"ROCR_VISIBLE_DEVICES": ""}, (), {0, 1, 2}),
        ({"ROCR_VISIBLE_DEVICES": "-1"}, (), {0, 1, 2}),
        ({"HIP_VISIBLE_DEVICES": "1"}, (1,), {0, 2}),
        # HIP numbers count the devices ROCR left: HIP 1 is the third GPU here.
        ({"ROCR_VISIBLE_DEVICES": "0,2", "HIP_VISIBLE_DEVICES": "1"}, (2,), {0, 1}),
        ({"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "1"}, (), {0, 1, 2}),
        ({"CUDA_VISIBLE_DEVICES": "0"}, (0,), {1, 2}),
        ({"HIP_VISIBLE_DEVICES": "2", "CUDA_VISIBLE_DEVICES": "0"}, (2,), {0, 1}),
        # a full-width digit is no device number to the runtime
        ({"HIP_VISIBLE_DEVICES": "\uff11"}, (), {0, 1, 2}),
        ({"ROCR_VISIBLE_DEVICES": "0,\uff12"}, (0,), {1, 2}),
    ],
)
def test_visible_devices(env, order, hidden):
    result = visible_devices(UUIDS, env)
    assert result.order == order
    assert set(result.hidden) == hidden


def test_hidden_devices_name_the_variable():
    result = visible_devices(UUIDS, {"ROCR_VISIBLE_DEVICES": "0,2", "HIP_VISIBLE_DEVICES": "1"})
    assert result.hidden == {1: "ROCR_VISIBLE_DEVICES=0,2", 0: "HIP_VISIBLE_DEVICES=1"}


@pytest.mark.parametrize(
    ("value", "gfx"),
    [
        ("11.0.0", "gfx1100"),
        ("9.0.6", "gfx906"),
        ("10.3.0", "gfx1030"),
        ("12.0.1", "gfx1201"),
    ],
)
def test_parse_override(value, gfx):
    assert parse_override(value) == gfx


@pytest.mark.parametrize("value", ["11", "gfx1100", "11.0.16", "0.0.0", "11.0.0.1"])
def test_parse_override_rejects(value):
    with pytest.raises(ValueError):
        parse_override(value)


def test_per_node_override_wins_over_the_global_one_and_empty_is_unset():
    env = {
        "HSA_OVERRIDE_GFX_VERSION": "10.3.0",
        "HSA_OVERRIDE_GFX_VERSION_2": "11.0.0",
        "HSA_OVERRIDE_GFX_VERSION_3": "",
    }
    assert override_for(2, env) == ("HSA_OVERRIDE_GFX_VERSION_2", "11.0.0")
    assert override_for(1, env) == ("HSA_OVERRIDE_GFX_VERSION", "10.3.0")
    assert override_for(3, env) == ("HSA_OVERRIDE_GFX_VERSION", "10.3.0")
    assert override_for(1, {"HSA_OVERRIDE_GFX_VERSION": " "}) is None


CARDS = ["GPU-8932f937-d72c-4106", "GPU-8932aa00-0000-0000", "GPU-77aa0000-0000-0000"]
MIGS = [[], ["MIG-c0ffee00-1111", "MIG-c0ffee00-2222"], []]


@pytest.mark.parametrize(
    ("value", "order"),
    [
        (None, [(0, None), (1, None), (2, None)]),
        ("", []),
        ("2,1", [(2, None), (1, None)]),  # the guide's example: 0 invisible, 2 before 1
        ("0,2,-1,1", [(0, None), (2, None)]),  # and: an invalid index ends the list
        ("0,9,1", [(0, None)]),  # an index past the last card is invalid too
        ("1gpu2,2ampere", [(1, None), (2, None)]),  # read as strtoul reads them
        ("1,1", []),  # a card named twice leaves none
        ("GPU-77aa,GPU-8932f937", [(2, None), (0, None)]),  # unique prefixes
        ("GPU-8932,0", []),  # an ambiguous prefix is invalid
        ("GPU-8932f937,1", [(0, None)]),  # another kind of entry ends the list
        ("1,GPU-77aa", [(1, None)]),
        ("MIG-c0ffee00-2222", [(1, "MIG-c0ffee00-2222")]),
        ("MIG-c0ffee00-1111,MIG-c0ffee00-2222", [(1, "MIG-c0ffee00-1111")]),  # one per card
        ("MIG-c0ffee00", []),  # ambiguous
    ],
)
def test_cuda_visible_devices_as_the_driver_reads_them(value, order):
    env = {} if value is None else {"CUDA_VISIBLE_DEVICES": value}
    result = cuda_visible_devices(CARDS, MIGS, env)
    assert list(result.order) == order
    shown = {card for card, _ in order}
    assert result.hidden == {
        n: f"CUDA_VISIBLE_DEVICES={value}" for n in range(len(CARDS)) if n not in shown
    }
