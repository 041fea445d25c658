"""The plugin's own tests, written with strata's kit only: the pytest plugin's fixtures
(strata_env, fake_sysfs, plugin_manager) and strata_core.testing's helpers."""

import json
import subprocess
import sys

from strata_rx6600 import UNVALIDATED, plugin

from strata_core.api import RunContext
from strata_core.testing import check_plugin, device_for, fake_gpu, plan_for


def test_it_keeps_every_hook_contract():
    assert check_plugin(plugin, "rx6600") == []


def test_the_plan_for_an_rx_6600():
    plan = plan_for("gfx1032", RunContext(os="linux"), plugins={"rx6600": plugin})
    assert plan.plugin == "rx6600"
    assert plan.switches["STRATA_MTP_SIDE_STREAM"].value == "1"
    assert plan.switches["STRATA_MTP_SIDE_STREAM"].source == "arch-default"
    assert UNVALIDATED in plan.warnings
    assert plan.kernels["prompt_gemm"].variant == "rocblas"  # gfx103x: through rocBLAS


def test_it_claims_its_card_and_refuses_others(plugin_manager):
    manager = plugin_manager({"rx6600": plugin})
    claims = dict(manager.claims(device_for("gfx1032")))
    assert claims["rx6600"].score == 100
    other = manager.claims(device_for("gfx1030"))
    assert dict(other)["rx6600"].reason == "carries code for gfx1032, not gfx1030"


def test_a_user_value_wins(strata_env):
    env = strata_env | {"STRATA_MTP_SIDE_STREAM": "0"}
    plan = plan_for("gfx1032", plugins={"rx6600": plugin}, env=env)
    assert plan.switches["STRATA_MTP_SIDE_STREAM"].value == "0"


def test_the_installed_command_picks_it_up(fake_sysfs, strata_env):
    root = fake_sysfs([fake_gpu("gfx1032", vram_gib=8, product_name="AMD Radeon RX 6600")])
    command = [sys.executable, "-m", "strata_core", "devices", "--json", "--sysfs", str(root)]
    answer = json.loads(subprocess.run(command, env=strata_env, capture_output=True,
                                       text=True, check=True).stdout)  # fmt: skip
    (device,) = answer["devices"]
    assert (device["gfx"], device["plugin"]) == ("gfx1032", "rx6600")
