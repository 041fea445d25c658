"""The plugin's own tests, written with strata's kit only: the pytest plugin's fixtures
(strata_env, fake_sysfs, plugin_manager) and strata_core.testing's helpers."""

import json
import subprocess
import sys

from strata_mi300x import plugin

from strata_core.api import RunContext
from strata_core.testing import check_plugin, device_for, fake_gpu, plan_for

MI300X = 0x74A1


def test_it_keeps_every_hook_contract():
    assert check_plugin(plugin, "mi300x") == []


def test_the_plan_for_an_mi300x():
    plan = plan_for("gfx942", RunContext(os="linux"), plugins={"mi300x": plugin})
    assert plan.plugin == "mi300x"
    assert plan.device.family == "CDNA3"
    side_stream = plan.switches["STRATA_MTP_SIDE_STREAM"]
    assert (side_stream.value, side_stream.source) == ("1", "arch-default")
    assert "this plugin's choice" in side_stream.reason
    attention = plan.kernels["prompt_attention"]
    assert "MFMA" in attention.reason
    assert "has no matrix cores" not in attention.reason
    assert plan.kernels["prompt_gemm"].variant == "hipblas"


def test_it_claims_its_card_and_refuses_others(plugin_manager):
    manager = plugin_manager({"mi300x": plugin})
    claims = dict(manager.claims(device_for("gfx942", wave_size=64)))
    assert claims["mi300x"].score == 100
    other = dict(manager.claims(device_for("gfx1100")))
    assert other["mi300x"].score == 0
    wave32 = dict(manager.claims(device_for("gfx942", wave_size=32)))
    assert wave32["mi300x"].reason == "is a wave64 build for gfx942; gfx942 is wave32"


def test_a_user_value_wins(strata_env):
    env = strata_env | {"STRATA_MTP_SIDE_STREAM": "0"}
    plan = plan_for("gfx942", plugins={"mi300x": plugin}, env=env)
    assert plan.switches["STRATA_MTP_SIDE_STREAM"].value == "0"


def test_the_installed_command_names_the_card(fake_sysfs, strata_env):
    root = fake_sysfs([fake_gpu("gfx942", vram_gib=192, device_id=MI300X)])
    command = [sys.executable, "-m", "strata_core", "devices", "--json", "--sysfs", str(root)]
    answer = json.loads(subprocess.run(command, env=strata_env, capture_output=True,
                                       text=True, check=True).stdout)  # fmt: skip
    (device,) = answer["devices"]
    assert (device["gfx"], device["plugin"], device["name"]) == (
        "gfx942",
        "mi300x",
        "Instinct MI300X",
    )
    assert (device["family"], device["matrix_cores"]) == ("CDNA3", "MFMA")
