from pathlib import Path

import attrs
import pytest

from strata_core.answer_cache import Recorder
from strata_core.api.records import DetectionContext
from strata_core.detect import kfd
from strata_core.detect.recording import RecordingContext
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
FIXTURES = Path(__file__).parent / "fixtures/kfd"
#: an excerpt of libdrm's current amdgpu.ids (fixtures/kfd/amdgpu_ids/SOURCE.md)
AMDGPU_IDS = FIXTURES / "amdgpu_ids/amdgpu.ids"


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
    assert m780.integrated is True
    assert m780.integrated_evidence == "VRAM 0.5 GiB against GTT 16.0 GiB"
    # Strix Halo's 64 GiB carve-out defeats the VRAM/GTT ratio: the detector reports what
    # sysfs shows, and the core applies "gfx1151 is integrated-only" from the plugins'
    # architecture records after detection.
    assert halo.integrated is False
    assert halo.integrated_evidence == "VRAM 64.0 GiB against GTT 32.0 GiB"
    assert mi50.integrated is False and "VRAM 16.0 GiB" in mi50.integrated_evidence
    assert mi50.wave_size == 64


def test_vram_gtt_ratio_marks_an_unknown_apu(tmp_path):
    apu = FakeGPU(100306, 0x164E, (0x12, 0, 0), 512 << 20, 16 * GIB, board_info=False)
    (report,) = kfd.walk(write_sysfs(tmp_path, [apu])).reports
    assert report.gfx == "gfx1036"
    assert report.integrated is True and "GTT 16.0 GiB" in report.integrated_evidence


def unknown_apu(vram: int, gtt: int) -> FakeGPU:
    """A gfx1036 without board_info or CPU cores on its node: only the VRAM/GTT rule
    decides."""
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


def drop_field(props: Path, name: str) -> None:
    lines = props.read_text().splitlines()
    props.write_text("".join(line + "\n" for line in lines if line.split()[:1] != [name]))


def test_a_gpu_node_without_gfx_target_version_is_listed_without_a_target(tmp_path):
    """Kernels before ~4.19-5.x did not print gfx_target_version: the GPU is still listed,
    with everything else its node and DRM files say."""
    root = write_sysfs(tmp_path, [RX_7900_XTX, R9700])
    drop_field(root / NODES / "1/properties", "gfx_target_version")
    found = kfd.walk(root)
    assert found.problems == ()
    old, r9700 = found.reports
    assert old.gfx is None and r9700.gfx == "gfx1201"
    assert old.node_id == 1 and old.pci == "0000:86:00.0" and old.device_id == 0x744C
    assert old.wave_size == 32 and old.vram_bytes == 24 * GIB
    assert old.integrated is False and "board_info" in old.integrated_evidence


def test_a_cpu_node_without_gfx_target_version_is_skipped_silently(tmp_path):
    root = write_sysfs(tmp_path, [R9700], cpu_nodes=2)
    drop_field(root / NODES / "0/properties", "gfx_target_version")
    drop_field(root / NODES / "1/properties", "gfx_target_version")
    drop_field(root / NODES / "1/properties", "simd_count")  # absent counts as none
    found = kfd.walk(root)
    assert found.problems == ()
    assert [(r.node_id, r.gfx) for r in found.reports] == [(2, "gfx1201")]


def test_gfx_target_version_0_beside_simds_stays_a_problem(tmp_path):
    root = write_sysfs(tmp_path, [FakeGPU(0, 0x744C, (3, 0, 0), GIB, GIB)])
    found = kfd.walk(root)
    assert found.reports == ()
    assert found.problems == (
        f"{root / NODES}/1/properties: gfx_target_version 0 on a node with 192 SIMDs; "
        "node skipped",
    )


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


def drm_device(root: Path, gpu: FakeGPU) -> Path:
    return root / "devices/pci" / gpu.pci_address


def test_device_id_and_pci_revision(tmp_path):
    root = write_sysfs(tmp_path, [RX_7900_XTX, attrs.evolve(R9700, revision=None)])
    (drm_device(root, RX_7900_XTX) / "revision").write_text("0xcc\n")
    xtx, r9700 = kfd.walk(root).reports
    assert (xtx.device_id, xtx.revision) == (0x744C, 0xCC)
    assert (r9700.device_id, r9700.revision) == (0x7551, None)  # no revision file


@pytest.mark.parametrize("text", ["c8\n", "0x\n", "0x1c8\n", "0xzz\n", "\n", "lots of text\n"])
def test_a_malformed_revision_is_unknown_and_no_problem(tmp_path, text):
    root = write_sysfs(tmp_path, [RX_7900_XTX])
    (drm_device(root, RX_7900_XTX) / "revision").write_text(text)
    found = kfd.walk(root)
    assert found.problems == ()
    assert found.reports[0].revision is None and found.reports[0].device_id == 0x744C


def test_a_device_id_of_0_is_unknown(tmp_path):
    (report,) = kfd.walk(write_sysfs(tmp_path, [attrs.evolve(RX_7900_XTX, device_id=0)])).reports
    assert report.device_id is None


def test_the_name_is_product_name_else_the_libdrm_table_else_none(tmp_path):
    named = attrs.evolve(R9700, product_name="AMD Radeon AI PRO R9700 Creator")
    root = write_sysfs(tmp_path, [RX_7900_XTX, named, attrs.evolve(MI50, revision=None)])
    xtx, r9700, mi50 = kfd.walk(root, amdgpu_ids=AMDGPU_IDS).reports
    assert xtx.name == "Radeon RX 7900 XTX"  # from the table, by device and revision
    assert r9700.name == "AMD Radeon AI PRO R9700 Creator"  # DRM product_name, as it is
    assert mi50.name is None  # 66A1 without a revision: its rows disagree
    assert kfd.walk(root).reports[0].name is None  # no table


def test_the_table_is_read_once_a_walk_through_the_recorder(tmp_path):
    reads: list[str] = []

    class Counting(Recorder):
        def read_text(self, path, *args, **kwargs):
            reads.append(str(path))
            return super().read_text(path, *args, **kwargs)

    root = write_sysfs(tmp_path, [RX_7900_XTX, attrs.evolve(RX_7900_XTX, pci=(0x87, 0, 0))])
    recorder = Counting()
    found = kfd.strata_detect_devices(
        RecordingContext(sysfs=root, amdgpu_ids=AMDGPU_IDS, recorder=recorder)
    )
    assert [r.pci for r in found.reports] == ["0000:86:00.0", "0000:87:00.0"]
    assert reads.count(str(AMDGPU_IDS)) == 1
    assert isinstance(recorder.files[str(AMDGPU_IDS)], list)  # the answer cache sees it


def test_a_missing_table_names_nothing_and_says_nothing(tmp_path):
    root = write_sysfs(tmp_path, [RX_7900_XTX])
    found = kfd.walk(root, amdgpu_ids=tmp_path / "no/amdgpu.ids")
    assert found.problems == () and found.notes == ()
    assert found.reports[0].name is None


def test_cpu_cores_on_a_gpu_node_mark_an_apu_whatever_the_drm_files_say(tmp_path):
    root = write_sysfs(tmp_path, [RX_7900_XTX])  # board_info present: "discrete"
    props = root / NODES / "1/properties"
    props.write_text(props.read_text().replace("cpu_cores_count 0\n", "cpu_cores_count 24\n"))
    (report,) = kfd.walk(root).reports
    assert report.integrated is True
    assert report.integrated_evidence == "KFD node 1 has 24 CPU cores beside its 192 SIMDs (an APU)"


# Trees from real machines: tests/fixtures/kfd/*/SOURCE.md says where each comes from.


def walk_fixture(name: str) -> kfd.Detection:
    return kfd.strata_detect_devices(
        DetectionContext(sysfs=FIXTURES / name, amdgpu_ids=AMDGPU_IDS)
    )


def test_real_rx_7900_xtx():
    found = walk_fixture("rx7900xtx")
    assert found.problems == () and found.notes == ()
    (xtx,) = found.reports
    assert (xtx.node_id, xtx.gfx, xtx.pci) == (1, "gfx1100", "0000:86:00.0")
    assert (xtx.device_id, xtx.revision, xtx.name) == (0x744C, 0xC8, "Radeon RX 7900 XTX")
    assert xtx.unique_id == f"{11673270660693242239:016x}" and xtx.wave_size == 32
    assert xtx.integrated is None and xtx.integrated_evidence is None  # no DRM counters


def test_rx_6650_xt_built_by_hand():
    found = walk_fixture("rx6650xt-built-by-hand")
    assert found.problems == ()
    (card,) = found.reports
    assert (card.node_id, card.gfx, card.pci) == (1, "gfx1032", "0000:03:00.0")
    assert (card.device_id, card.revision, card.name) == (0x73EF, 0xC1, "Radeon RX 6650 XT")
    assert card.integrated is False
    assert card.integrated_evidence == "VRAM 8.0 GiB against GTT 16.0 GiB"


def test_real_mi300a_four_sockets():
    """Four CPU nodes (gfx_target_version 0) said nothing about; four gfx942 GPU nodes, one
    per PCI domain. This kernel puts the MI300A's CPU cores on the CPU nodes; what marks its
    GPUs as sharing the CPU's memory is the COHERENTHOSTACCESS bit of their capability."""
    found = walk_fixture("mi300a-4-sockets")
    assert found.problems == () and found.notes == ()
    assert [r.node_id for r in found.reports] == [4, 5, 6, 7]
    assert [r.pci for r in found.reports] == [f"000{d}:02:00.0" for d in range(4)]
    for gpu in found.reports:
        assert (gpu.gfx, gpu.device_id, gpu.wave_size) == ("gfx942", 0x74A0, 64)
        assert gpu.name == "Instinct MI300A"  # the one name of 74A0, revision unknown
        assert gpu.integrated is True
        assert gpu.integrated_evidence == (
            f"KFD node {gpu.node_id}'s GPU shares coherent memory with the CPU (capability "
            "COHERENTHOSTACCESS: an APU such as the MI300A, or a GPU on its CPU's xGMI)"
        )
    xtx = walk_fixture("rx7900xtx").reports[0]  # a discrete card: the bit is clear
    assert xtx.integrated is None


def test_real_old_kernel_vega10_without_gfx_target_version():
    """A 2018 kernel: the CPU node (simd_count 0) is skipped silently, the GPU is listed
    with its device id and no target."""
    found = walk_fixture("vega10-old-kernel")
    assert found.problems == () and found.notes == ()
    (gpu,) = found.reports
    assert (gpu.node_id, gpu.gfx, gpu.pci) == (1, None, "0000:19:00.0")
    assert (gpu.device_id, gpu.revision) == (0x6860, None)
    assert gpu.name is None  # 6860's rows name an MI25, a Pro V340 and a V320
    assert gpu.unique_id == f"{14073402507705256556:016x}" and gpu.wave_size == 64
    assert gpu.integrated is None


def test_real_raven_apu_combined_node():
    """An ACPI-CRAT APU: one node holds the CPU cores and the SIMDs, on a kernel without
    gfx_target_version."""
    found = walk_fixture("raven-apu-old-kernel")
    assert found.problems == () and found.notes == ()
    (apu,) = found.reports
    assert (apu.node_id, apu.gfx, apu.pci, apu.device_id) == (0, None, "0000:0a:00.0", 0x15DD)
    assert apu.integrated is True
    assert apu.integrated_evidence == "KFD node 0 has 8 CPU cores beside its 44 SIMDs (an APU)"
    assert apu.name is None  # 15DD's rows disagree and the tree has no revision
