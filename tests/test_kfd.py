import attrs
import pytest

from strata_core.detect import kfd
from strata_core.testing.sysfs import (
    GIB,
    MI50,
    R9700,
    RADEON_780M,
    RX_7900_XTX,
    STRIX_HALO,
    FakeGPU,
    write_sysfs,
)

NODES = "class/kfd/kfd/topology/nodes"


@pytest.mark.parametrize(
    ("version", "gfx"),
    [
        (110000, "gfx1100"),
        (120001, "gfx1201"),
        (90006, "gfx906"),
        (110501, "gfx1151"),
        (100300, "gfx1030"),
        (90010, "gfx90a"),
        (110003, "gfx1103"),
    ],
)
def test_decode_gfx_target_version(version, gfx):
    assert kfd.decode_gfx_target_version(version) == gfx


@pytest.mark.parametrize("version", [0, 110016, 111600, 99])
def test_decode_rejects_versions_that_name_no_target(version):
    with pytest.raises(ValueError):
        kfd.decode_gfx_target_version(version)


def test_pci_address_from_domain_and_location_id():
    assert kfd.pci_address(0, 34304) == "0000:86:00.0"
    assert kfd.pci_address(1, 0x0C << 8 | 2 << 3 | 1) == "0001:0c:02.1"


def test_rx_7900_xtx(tmp_path):
    found = kfd.walk(write_sysfs(tmp_path, [RX_7900_XTX]))
    assert found.problems == ()
    (report,) = found.reports
    assert report.gfx == "gfx1100"
    assert report.pci == "0000:86:00.0"
    assert report.node_id == 1
    assert report.unique_id == f"{11673270660693242239:016x}"
    assert report.vram_bytes == 24 * GIB and report.gtt_bytes == 31 * GIB
    assert report.wave_size == 32
    assert report.integrated is False
    assert "board_info" in report.integrated_evidence


def test_integrated_evidence(tmp_path):
    found = kfd.walk(write_sysfs(tmp_path, [RADEON_780M, STRIX_HALO, MI50]))
    m780, halo, mi50 = found.reports
    assert m780.integrated and "only as an integrated" in m780.integrated_evidence
    # Strix Halo's 64 GiB carve-out defeats the VRAM/GTT ratio; its target decides.
    assert halo.integrated and "gfx1151" in halo.integrated_evidence
    assert mi50.integrated is False and "VRAM 16.0 GiB" in mi50.integrated_evidence
    assert mi50.wave_size == 64


def test_vram_gtt_ratio_marks_an_unknown_apu(tmp_path):
    apu = FakeGPU(100306, 0x164E, (0x12, 0, 0), 512 << 20, 16 * GIB, board_info=False)
    (report,) = kfd.walk(write_sysfs(tmp_path, [apu])).reports
    assert report.gfx == "gfx1036"
    assert report.integrated is True and "GTT 16.0 GiB" in report.integrated_evidence


def unknown_apu(vram: int, gtt: int) -> FakeGPU:
    """A gfx1036 (a target archdb does not know as integrated-only) without board_info: only
    the VRAM/GTT rule decides."""
    return FakeGPU(100306, 0x164E, (0x12, 0, 0), vram, gtt, board_info=False)


@pytest.mark.parametrize(
    ("vram", "gtt", "integrated"),
    [
        # VRAM at most 4 GiB (a GTT of 32 GiB holds the other two clauses)
        (4 * GIB - 1, 32 * GIB, True),
        (4 * GIB, 32 * GIB, True),
        (4 * GIB + 1, 32 * GIB, False),
        # GTT at least 8 GiB
        (GIB, 8 * GIB, True),
        (GIB, 8 * GIB - 1, False),
        # GTT at least four times the VRAM
        (3 * GIB, 12 * GIB, True),
        (3 * GIB, 12 * GIB - 1, False),
    ],
)
def test_the_unknown_apu_rule_at_its_edges(tmp_path, vram, gtt, integrated):
    """An APU is VRAM <= 4 GiB, GTT >= 8 GiB and GTT >= 4 x VRAM: each bound holds at the
    edge and fails one byte past it."""
    (report,) = kfd.walk(write_sysfs(tmp_path, [unknown_apu(vram, gtt)])).reports
    assert report.integrated is integrated
    assert report.integrated_evidence == (
        f"VRAM {vram / GIB:.1f} GiB against GTT {gtt / GIB:.1f} GiB"
    )


def test_mem_info_vram_vendor_alone_marks_a_discrete_card(tmp_path):
    """A kernel without board_info: mem_info_vram_vendor says discrete, even where the
    VRAM/GTT rule would say APU."""
    root = write_sysfs(tmp_path, [attrs.evolve(unknown_apu(4 * GIB, 32 * GIB), board_info=True)])
    (root / "devices/pci/0000:12:00.0/board_info").unlink()
    (report,) = kfd.walk(root).reports
    assert report.integrated is False
    assert report.integrated_evidence == (
        "DRM mem_info_vram_vendor present (amdgpu hides it on APUs)"
    )


def test_drm_device_found_through_card_uevent_when_render_node_is_missing(tmp_path):
    root = write_sysfs(tmp_path, [R9700])
    (root / "class/drm/renderD128/device").unlink()
    (report,) = kfd.walk(root).reports
    assert report.vram_bytes == 32 * GIB


def test_cpu_only_machine_and_no_kfd(tmp_path):
    assert kfd.walk(write_sysfs(tmp_path / "cpu", [], cpu_nodes=2)) == kfd.Detection()
    assert kfd.walk(tmp_path / "empty") == kfd.Detection()


def test_no_kfd_beside_an_amd_display_function_asks_for_the_driver(tmp_path):
    function = tmp_path / "bus/pci/devices/0000:03:00.0"
    function.mkdir(parents=True)
    (function / "vendor").write_text("0x1002\n")
    (function / "class").write_text("0x030000\n")
    found = kfd.walk(tmp_path)
    assert found.reports == () and found.problems == ()
    assert found.notes == (
        f"no KFD topology at {tmp_path / NODES} (is the amdgpu driver loaded?)",
    )


def test_garbage_lines_are_reported_with_their_line_and_the_rest_is_read(tmp_path):
    root = write_sysfs(tmp_path, [RX_7900_XTX])
    props = root / NODES / "1/properties"
    lines = props.read_text().splitlines()
    lines[3:3] = ["this is not a field", "simd_count -3"]
    props.write_text("\n".join(lines) + "\n")
    found = kfd.walk(root)
    assert found.reports[0].gfx == "gfx1100"
    assert found.problems == (
        f"{props}:4: expected 'name value', got 'this is not a field'",
        f"{props}:5: expected 'name value', got 'simd_count -3'",
    )


def test_missing_gfx_target_version_skips_the_node(tmp_path):
    root = write_sysfs(tmp_path, [RX_7900_XTX, R9700])
    props = root / NODES / "1/properties"
    props.write_text(
        "".join(
            line + "\n"
            for line in props.read_text().splitlines()
            if not line.startswith("gfx_target_version")
        )
    )
    found = kfd.walk(root)
    assert [r.gfx for r in found.reports] == ["gfx1201"]
    assert found.problems == (f"{props}: no gfx_target_version; node skipped",)


def test_unreadable_empty_and_binary_nodes(tmp_path):
    root = write_sysfs(tmp_path, [RX_7900_XTX, R9700, MI50, RADEON_780M])
    nodes = root / NODES
    (nodes / "1/properties").unlink()
    (nodes / "1/properties").mkdir()  # reading it fails, as EPERM would
    (nodes / "2/properties").write_text("")
    (nodes / "3/properties").write_bytes(b"\xff\xfe\x00garbage")
    (nodes / "5").mkdir()  # a node with no properties file
    found = kfd.walk(root)
    assert [r.gfx for r in found.reports] == ["gfx1103"]
    assert found.problems == (
        f"{nodes}/1/properties: cannot read (Is a directory); node skipped",
        f"{nodes}/2/properties: empty; node skipped",
        f"{nodes}/3/properties: not text; node skipped",
        f"{nodes}/5: no properties file; node skipped",
    )


def test_malformed_vram_counter_is_reported_and_left_unknown(tmp_path):
    root = write_sysfs(tmp_path, [RX_7900_XTX])
    counter = root / "class/drm/renderD128/device/mem_info_vram_total"
    counter.write_text("lots\n")
    (report,) = kfd.walk(root).reports
    assert report.vram_bytes is None
    assert kfd.walk(root).problems == (f"{counter}: expected a byte count up to 1 PiB, got 'lots'",)


def test_undecodable_version_is_reported(tmp_path):
    root = write_sysfs(tmp_path, [FakeGPU(111600, 1, (1, 0, 0), GIB, GIB)])
    found = kfd.walk(root)
    assert found.reports == ()
    assert "gfx_target_version 111600 does not decode" in found.problems[0]
