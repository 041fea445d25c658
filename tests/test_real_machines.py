"""`devices` and `plan` on KFD topology captured from real machines (tests/fixtures/kfd, each
tree naming its source), with libdrm's marketing names: every card named as its owner knows it,
APUs integrated, the GPU of a kernel older than gfx_target_version listed, and nothing said of a
CPU node."""

import json
from pathlib import Path

import pytest
from cli_runner import strata_core

from strata_core.api.arch import Architectures
from strata_core.api.manager import PluginManager
from strata_core.api.records import DeviceReport
from strata_core.plan.devices import build_devices

REAL = Path(__file__).parent / "fixtures" / "kfd"
NAMES = REAL / "amdgpu_ids" / "amdgpu.ids"
#: what no line may say of a real machine
NEVER = ("no gfx_target_version", "node skipped", "no GPU found", "unknown gfx", "not in the")


def devices(tree: str, env: dict[str, str], *args: str, names: Path | None = NAMES) -> dict:
    result = strata_core(
        "devices",
        "--json",
        "--no-hip",
        "--sysfs",
        str(REAL / tree),
        *args,
        env=env | {"STRATA_AMDGPU_IDS": str(names or "")},
    )
    return json.loads(result.stdout)


def text(command: str, tree: str, env: dict[str, str]) -> str:
    result = strata_core(
        command,
        "--no-hip",
        "--sysfs",
        str(REAL / tree),
        env=env | {"STRATA_AMDGPU_IDS": str(NAMES)},
        check=False,
    )
    return result.stdout + result.stderr


@pytest.mark.parametrize("names", [NAMES, None], ids=["libdrm", "plugin"])
def test_an_rx_7900_xtx_is_named_by_its_device_id_and_revision(env, names):
    """tinygrad's capture of an RX 7900 XTX (744C, revision C8): libdrm's table names it, and
    without the table its plugin's record does; never "RX 7900 XT / RX 7900 XTX"."""
    answer = devices("rx7900xtx", env, names=names)
    (card,) = answer["devices"]
    assert (card["name"], card["gfx"], card["family"], card["matrix_cores"]) == (
        "Radeon RX 7900 XTX",
        "gfx1100",
        "RDNA3",
        "WMMA",
    )
    assert (card["plugin"], card["selected"], card["integrated"]) == ("hip_rdna3", True, False)
    assert answer["warnings"] == []


def test_an_rx_6650_xt_is_not_called_an_rx_6600(env):
    (card,) = devices("rx6650xt-built-by-hand", env)["devices"]
    assert (card["name"], card["gfx"], card["family"]) == ("Radeon RX 6650 XT", "gfx1032", "RDNA2")
    assert card["integrated"] is False


def test_an_mi300a_is_an_apu_and_its_cpu_nodes_are_not_warned_about(env):
    """Four MI300A sockets: four CPU nodes, four gfx942 GPUs whose capability says they share
    the CPU's memory. No in-tree plugin runs gfx942: each is listed, named and integrated."""
    answer = devices("mi300a-4-sockets", env)
    assert [d["name"] for d in answer["devices"]] == ["Instinct MI300A"] * 4
    assert {d["gfx"] for d in answer["devices"]} == {"gfx942"}
    assert all(d["integrated"] for d in answer["devices"])
    assert all("COHERENTHOSTACCESS" in d["integrated_evidence"] for d in answer["devices"])
    assert answer["warnings"] == []
    out = text("devices", "mi300a-4-sockets", env)
    assert "integrated" in out and not any(never in out for never in NEVER)


def test_a_gpu_of_an_old_kernel_is_listed_with_its_device_id(env):
    """A 2018 kernel prints no gfx_target_version: the Vega 10 (6860) is listed, its
    architecture said to be unreported, never "no GPU found"."""
    answer = devices("vega10-old-kernel", env)
    (card,) = answer["devices"]
    assert (card["gfx"], card["family"], card["pci"]) == (
        "unreported",
        "architecture unknown",
        "0000:19:00.0",
    )
    assert answer["notes"] == [
        "an AMD GPU (PCI 0000:19:00.0, device 0x6860): this kernel's KFD does not report the "
        "architecture; a newer kernel (or HSA_OVERRIDE_GFX_VERSION) names it",
        "HIP 0 (unreported) passed over: this kernel's KFD does not report the architecture, so "
        "no plugin can claim it; a newer kernel (or HSA_OVERRIDE_GFX_VERSION) names it",
    ]
    assert answer["warnings"] == []
    for command in ("devices", "plan"):
        out = text(command, "vega10-old-kernel", env)
        assert "this kernel's KFD does not report the architecture" in out
        assert not any(never in out for never in NEVER), out


def test_a_raven_apu_of_an_old_kernel_is_integrated(env):
    """One ACPI-CRAT node holds the Raven's CPU cores and its SIMDs."""
    answer = devices("raven-apu-old-kernel", env)
    (apu,) = answer["devices"]
    assert apu["integrated"] is True
    assert apu["integrated_evidence"] == "KFD node 0 has 8 CPU cores beside its 44 SIMDs (an APU)"
    assert answer["warnings"] == []


def test_a_plugin_that_names_the_device_id_gives_the_architecture_kfd_did_not():
    """Where a plugin's record lists the PCI device id of a GPU whose architecture KFD did not
    report, the card gets that target, and the note says who named it."""
    archs = Architectures(PluginManager.discover({}).arch_records())
    report = DeviceReport(source="kfd", pci="0000:03:00.0", node_id=1, device_id=0x7551)
    notes: list[str] = []
    (card,) = build_devices([report], {}, [], archs=archs, notes=notes)
    assert (card.gfx, card.family, card.name) == ("gfx1201", "RDNA4", "an RDNA4 card")
    assert notes == [
        "an AMD GPU (PCI 0000:03:00.0, device 0x7551): this kernel's KFD does not report the "
        "architecture; hip_rdna4 names device 0x7551 a gfx1201"
    ]
