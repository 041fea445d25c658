"""Sysfs trees of sample machines, for any card: KFD topology nodes, the amdgpu DRM device
files and NVIDIA's PCI display functions (the tests' machines, and the examples strata ships:
strata_core.detect.examples).

The ``properties`` text follows the field order of the kernel's node_show()
(drivers/gpu/drm/amd/amdkfd/kfd_topology.c), with the values of an RX 7900 XTX's node, as
tinygrad's mock GPU records them (test/mockgpu/amd/amdgpu.py), as the template.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import attrs

GIB = 1 << 30
MIB = 1 << 20

_COMMON_FIELDS = (
    "cpu_cores_count",
    "simd_count",
    "mem_banks_count",
    "caches_count",
    "io_links_count",
    "p2p_links_count",
    "cpu_core_id_base",
    "simd_id_base",
    "max_waves_per_simd",
    "lds_size_in_kb",
    "gds_size_in_kb",
    "num_gws",
    "wave_front_size",
    "array_count",
    "simd_arrays_per_engine",
    "cu_per_simd_array",
    "simd_per_cu",
    "max_slots_scratch_cu",
    "gfx_target_version",
    "vendor_id",
    "device_id",
    "location_id",
    "domain",
    "drm_render_minor",
    "hive_id",
    "num_sdma_engines",
    "num_sdma_xgmi_engines",
    "num_sdma_queues_per_engine",
    "num_cp_queues",
)
_GPU_ONLY_FIELDS = (
    "max_engine_clk_fcompute",
    "local_mem_size",
    "fw_version",
    "capability",
    "debug_prop",
    "sdma_fw_version",
    "unique_id",
    "num_xcc",
)


@attrs.frozen
class FakeGPU:
    """One GPU as the kernel shows it. ``board_info`` marks a discrete board (amdgpu hides
    it on APUs); ``pci`` is bus, device, function; ``revision`` the PCI revision, which with
    the device id names the card (libdrm's amdgpu.ids)."""

    gfx_target_version: int
    device_id: int
    pci: tuple[int, int, int]
    vram_bytes: int
    gtt_bytes: int
    wave_front_size: int = 32
    simd_count: int = 192
    unique_id: int = 0
    board_info: bool = True
    domain: int = 0
    product_name: str | None = None
    revision: int | None = None

    @property
    def location_id(self) -> int:
        bus, device, function = self.pci
        return bus << 8 | device << 3 | function

    @property
    def pci_address(self) -> str:
        bus, device, function = self.pci
        return f"{self.domain:04x}:{bus:02x}:{device:02x}.{function:x}"


RX_7900_XTX = FakeGPU(
    110000,
    0x744C,
    (0x86, 0, 0),
    24 * GIB,
    31 * GIB,
    unique_id=11673270660693242239,
    revision=0xC8,
)
R9700 = FakeGPU(
    120001,
    0x7551,
    (0x03, 0, 0),
    32 * GIB,
    23 * GIB,
    simd_count=128,
    unique_id=0x1C2E4D6A8B9F0123,
    revision=0xC0,
)
RX_9070_XT = FakeGPU(
    120001,
    0x7550,
    (0x0C, 0, 0),
    16 * GIB,
    23 * GIB,
    simd_count=128,
    unique_id=0x2D3F5E7B9CA01234,
    revision=0xC0,
)
RADEON_780M = FakeGPU(
    110003,
    0x15BF,
    (0xC6, 0, 0),
    512 * MIB,
    16 * GIB,
    simd_count=24,
    board_info=False,
    revision=0xC1,
)
STRIX_HALO = FakeGPU(
    110501,
    0x1586,
    (0xC5, 0, 0),
    64 * GIB,
    32 * GIB,
    simd_count=80,
    board_info=False,
    revision=0xC1,
)
MI50 = FakeGPU(
    90006,
    0x66A1,
    (0x43, 0, 0),
    16 * GIB,
    32 * GIB,
    wave_front_size=64,
    simd_count=240,
    unique_id=0x4A1B2C3D4E5F6071,
    board_info=False,
    revision=0x02,
)


def gfx_target_version(gfx: str) -> int:
    """KFD's number for a target: gfx1032 is 100302, gfx906 is 90006, gfx90a is 90010."""
    digits = gfx.split(":", 1)[0].removeprefix("gfx")
    if len(digits) < 3 or not digits[:-2].isdecimal():
        raise ValueError(f"{gfx!r} is not a gfx target")
    return int(digits[:-2]) * 10000 + int(digits[-2], 16) * 100 + int(digits[-1], 16)


def fake_gpu(
    gfx: str,
    *,
    vram_gib: float = 16,
    gtt_gib: float = 16,
    pci_bus: int = 0x03,
    device_id: int = 0x73FF,
    revision: int | None = None,
    wave_size: int | None = None,
    integrated: bool = False,
    product_name: str | None = None,
) -> FakeGPU:
    """A card of any target as KFD shows it. The wave size defaults to 64 on gfx9 and 32 on
    later generations; an integrated GPU has no board_info and the GTT is its memory."""
    version = gfx_target_version(gfx)
    return FakeGPU(
        version,
        device_id,
        (pci_bus, 0, 0),
        int(vram_gib * GIB),
        int(gtt_gib * GIB),
        wave_front_size=wave_size or (64 if version < 100000 else 32),
        board_info=not integrated,
        product_name=product_name,
        revision=revision,
    )


def cpu_properties(cores: int = 16) -> str:
    values = dict.fromkeys(_COMMON_FIELDS, 0) | {
        "cpu_cores_count": cores,
        "mem_banks_count": 1,
        "io_links_count": 1,
    }
    return "".join(f"{k} {v}\n" for k, v in values.items()) + "max_engine_clk_ccompute 5100\n"


def gpu_properties(gpu: FakeGPU, render_minor: int) -> str:
    values = {
        "cpu_cores_count": 0,
        "simd_count": gpu.simd_count,
        "mem_banks_count": 1,
        "caches_count": 206,
        "io_links_count": 1,
        "p2p_links_count": 0,
        "cpu_core_id_base": 0,
        "simd_id_base": 2147488032,
        "max_waves_per_simd": 16,
        "lds_size_in_kb": 64,
        "gds_size_in_kb": 0,
        "num_gws": 64,
        "wave_front_size": gpu.wave_front_size,
        "array_count": 12,
        "simd_arrays_per_engine": 2,
        "cu_per_simd_array": 8,
        "simd_per_cu": 2,
        "max_slots_scratch_cu": 32,
        "gfx_target_version": gpu.gfx_target_version,
        "vendor_id": 4098,
        "device_id": gpu.device_id,
        "location_id": gpu.location_id,
        "domain": gpu.domain,
        "drm_render_minor": render_minor,
        "hive_id": 0,
        "num_sdma_engines": 2,
        "num_sdma_xgmi_engines": 0,
        "num_sdma_queues_per_engine": 6,
        "num_cp_queues": 8,
        "max_engine_clk_fcompute": 2482,
        "local_mem_size": 0,
        "fw_version": 2140,
        "capability": 671588992,
        "debug_prop": 1495,
        "sdma_fw_version": 20,
        "unique_id": gpu.unique_id,
        "num_xcc": 1,
    }
    return "".join(f"{k} {v}\n" for k, v in values.items()) + "max_engine_clk_ccompute 2400\n"


def write_sysfs(root: Path, gpus: Sequence[FakeGPU], cpu_nodes: int = 1) -> Path:
    """Write a sysfs tree with ``cpu_nodes`` CPU nodes, then one node per GPU, and the DRM
    device directory of each GPU (reached as renderD<minor>/device and card<N>/device)."""
    nodes = root / "class/kfd/kfd/topology/nodes"
    nodes.mkdir(parents=True, exist_ok=True)
    for node in range(cpu_nodes):
        (nodes / str(node)).mkdir()
        (nodes / str(node) / "properties").write_text(cpu_properties())
    drm = root / "class/drm"
    drm.mkdir(parents=True, exist_ok=True)
    for n, gpu in enumerate(gpus):
        gpu_node = nodes / str(cpu_nodes + n)
        gpu_node.mkdir()
        minor = 128 + n
        (gpu_node / "properties").write_text(gpu_properties(gpu, minor))
        (gpu_node / "name").write_text("ip discovery\n")
        device = root / "devices/pci" / gpu.pci_address
        device.mkdir(parents=True)
        (device / "mem_info_vram_total").write_text(f"{gpu.vram_bytes}\n")
        (device / "mem_info_gtt_total").write_text(f"{gpu.gtt_bytes}\n")
        (device / "uevent").write_text(f"DRIVER=amdgpu\nPCI_SLOT_NAME={gpu.pci_address}\n")
        if gpu.board_info:
            (device / "board_info").write_text("type : oam\n")
            (device / "mem_info_vram_vendor").write_text("samsung\n")
        if gpu.product_name:
            (device / "product_name").write_text(gpu.product_name + "\n")
        if gpu.revision is not None:
            (device / "revision").write_text(f"0x{gpu.revision:02x}\n")
        for link in (f"renderD{minor}", f"card{n}"):
            (drm / link).mkdir()
            (drm / link / "device").symlink_to(os.path.relpath(device, drm / link))
    return root


def write_nvidia_gpu(root: Path, pci: str = "0000:41:00.0", device_id: int = 0x2335) -> Path:
    """Add an NVIDIA display function (by default an H200's: device 0x2335, class 0x030200)
    to the PCI bus of a sysfs tree, as strata_core.detect.pci reads it."""
    function = root / "bus/pci/devices" / pci
    function.mkdir(parents=True)
    (function / "vendor").write_text("0x10de\n")
    (function / "class").write_text("0x030200\n")
    (function / "device").write_text(f"0x{device_id:04x}\n")
    return root
