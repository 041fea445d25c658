"""Detection, claims and card choice on the fixture machines, with the in-tree plugins."""


import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.api.records import DeviceReport
from strata_core.errors import StrataError
from strata_core.plan.claims import assign
from strata_core.plan.devices import FIELDS, KERNEL_FIRST, build_devices, merge_reports
from strata_core.plan.selection import (
    DeviceChoice,
    choose,
    choose_backend,
    parse_gpus,
    parse_roles,
)
from strata_core.testing.sysfs import (
    GIB,
    MI50,
    R9700,
    RADEON_780M,
    RX_7900_XTX,
    RX_9070_XT,
    STRIX_HALO,
    fake_gpu,
)


def plan(machine, gpus, choice=None, **env):
    found, manager = machine(gpus, **env)
    assignments, problems = assign(manager, found.devices, env.get("STRATA_ARCH_PLUGIN"))
    return found, assignments, choose(assignments, choice or DeviceChoice()), problems


def test_rx_7900_xtx(machine):
    found, (a,), selection, problems = plan(machine, [RX_7900_XTX])
    assert (a.device.index, a.device.gfx, a.device.family) == (0, "gfx1100", "RDNA3")
    assert a.device.name == "Radeon RX 7900 XTX"
    assert a.plugin == "hip_rdna3" and a.reason == "hip_rdna3 carries code for gfx1100"
    assert selection.indices == (0,)
    assert found.problems == () and problems == []


def test_r9700_and_rx_9070_xt_takes_the_card_with_more_vram(machine):
    _, assignments, selection, _ = plan(machine, [RX_9070_XT, R9700])
    assert [a.plugin for a in assignments] == ["hip_rdna4", "hip_rdna4"]
    assert selection.indices == (1,)
    assert selection.reason == "the discrete card with the most VRAM of the 2 a plugin runs"


def test_a_card_no_plugin_runs_is_passed_over_by_name(machine):
    """The reason says why a card with more VRAM that no plugin runs was not taken."""
    big = fake_gpu("gfx908", vram_gib=32, pci_bus=0x05)
    _, _, selection, _ = plan(machine, [big, R9700])
    assert selection.indices == (1,)
    assert selection.reason == "the only discrete card a plugin runs"
    assert selection.notes[0].startswith("HIP 0 (gfx908) passed over: no installed plugin runs")


def test_780m_alone_runs_on_the_igpu_plugin(machine):
    _, (a,), selection, _ = plan(machine, [RADEON_780M])
    assert a.device.integrated and a.plugin == "igpu"
    assert selection.indices == (0,)
    assert "integrated GPU" in selection.reason


def test_780m_beside_rx_7900_xtx_is_skipped(machine):
    _, assignments, selection, _ = plan(machine, [RADEON_780M, RX_7900_XTX])
    assert [a.plugin for a in assignments] == ["igpu", "hip_rdna3"]
    assert selection.indices == (1,)
    assert selection.notes == (
        "integrated Radeon 780M Graphics (HIP 0, gfx1103) skipped: a discrete card can run",
    )


HALO = "Radeon 8060S Graphics"
HALO_SKIPPED = f"integrated {HALO} (HIP 0, gfx1151) skipped: a discrete card can run"


@pytest.mark.parametrize("halo_gib", [16, 64, 128])
@pytest.mark.parametrize(
    ("others", "chosen", "reason"),
    [
        ([RX_9070_XT], 1, "the only discrete card a plugin runs"),
        ([RX_9070_XT, R9700], 2, "the discrete card with the most VRAM of the 2 a plugin runs"),
    ],
    ids=["rx9070xt", "rx9070xt+r9700"],
)
def test_a_discrete_card_wins_over_a_strix_halo_whatever_its_vram(
    machine, halo_gib, others, chosen, reason
):
    """AMD_HIP.md: the automatic choice "skips ... integrated chips, while a card of its own
    can run": the pool is the discrete cards, whether the iGPU holds as much VRAM as the RX
    9070 XT (16 GiB) or more than every card (64 and 128 GiB); --gpus all skips it too."""
    halo = attrs.evolve(STRIX_HALO, vram_bytes=halo_gib * GIB)
    _, assignments, selection, _ = plan(machine, [halo, *others])
    assert [a.plugin for a in assignments] == ["igpu", *["hip_rdna4"] * len(others)]
    assert (selection.indices, selection.reason) == ((chosen,), reason)
    assert selection.notes == (HALO_SKIPPED,)
    every = plan(machine, [halo, *others], DeviceChoice(gpus="all"))[2]
    assert every.indices == tuple(range(len(others), 0, -1))
    assert HALO_SKIPPED in every.notes


def test_a_strix_halo_runs_beside_a_discrete_card_no_plugin_runs(machine):
    """A discrete card that no plugin runs leaves the pool to the iGPU, and is passed over by
    name."""
    big = fake_gpu("gfx908", vram_gib=32, pci_bus=0x05)
    _, _, selection, _ = plan(machine, [big, attrs.evolve(STRIX_HALO, vram_bytes=128 * GIB)])
    assert selection.indices == (1,)
    assert selection.reason == "the only integrated GPU (no discrete card can run) a plugin runs"
    (note,) = selection.notes
    assert note.startswith("HIP 0 (gfx908) passed over: no installed plugin runs gfx908")


def test_equal_vram_goes_to_the_lower_hip_number(machine):
    """Two cards alike: the automatic choice takes HIP 0, and --gpus all keeps HIP order, so
    the last, HIP 1, is the main card."""
    twin = attrs.evolve(RX_9070_XT, pci=(0x0D, 0, 0), unique_id=RX_9070_XT.unique_id + 1)
    _, _, selection, _ = plan(machine, [RX_9070_XT, twin])
    assert selection.indices == (0,)
    assert selection.reason == "the discrete card with the most VRAM of the 2 a plugin runs"
    every = plan(machine, [RX_9070_XT, twin], DeviceChoice(gpus="all"))[2]
    assert every.indices == (0, 1) and every.roles == {0: "helper", 1: "main"}
    assert every.reason == (
        "every card a plugin runs, most VRAM first (--gpus all from command line)"
    )


@pytest.mark.parametrize(
    ("vram", "chosen", "reason"),
    [
        (
            (None, None),
            (0,),
            "the first discrete card of the 2 a plugin runs: none's VRAM is known, so the lowest "
            "HIP number",
        ),
        (
            (None, 16 * GIB),
            (1,),
            "the discrete card with the most VRAM of the 2 a plugin runs (HIP 0: VRAM unknown)",
        ),
    ],
)
def test_a_choice_among_cards_of_unknown_vram_says_so(vram, chosen, reason):
    """Where KFD has no DRM counters (a capture without them, a DRM folder missing), the
    choice does not claim to have weighed VRAM it never read."""
    from strata_core.api.arch import Architectures
    from strata_core.api.manager import PluginManager

    manager = PluginManager.discover({})
    reports = [
        DeviceReport(source="kfd", pci=f"0000:0{n}:00.0", node_id=n + 1, gfx="gfx1201",
                     wave_size=32, vram_bytes=size)
        for n, size in enumerate(vram)
    ]  # fmt: skip
    devices = build_devices(reports, {}, [], archs=Architectures(manager.arch_records()))
    assignments, _ = assign(manager, devices)
    selection = choose(assignments, DeviceChoice())
    assert (selection.indices, selection.reason) == (chosen, reason)


def test_strix_halo(machine):
    _, (a,), selection, _ = plan(machine, [STRIX_HALO])
    assert (a.device.gfx, a.device.family, a.plugin) == ("gfx1151", "RDNA3.5", "igpu")
    assert a.device.integrated and selection.indices == (0,)


def test_two_mi50_run_on_the_gfx906_plugin_and_wave32_plugins_refuse_them(machine):
    second = attrs.evolve(MI50, pci=(0x44, 0, 0), unique_id=7)
    _, assignments, selection, _ = plan(machine, [MI50, second])
    assert [a.plugin for a in assignments] == ["gfx906", "gfx906"]
    refusals = dict(assignments[0].claims)
    assert refusals["hip_rdna3"].score == 0
    assert (
        refusals["hip_rdna3"].reason
        == "is a wave32 build for gfx1100, gfx1101, gfx1102; gfx906 is wave64"
    )
    assert selection.indices == (0,)


def test_cpu_only_machine(machine):
    found, assignments, selection, _ = plan(machine, [], cpu_nodes=2)
    assert found.devices == () and assignments == []
    assert selection.indices == () and selection.reason.startswith("no visible GPU")


def test_a_card_no_plugin_covers_names_its_family(machine):
    from strata_core.testing.sysfs import FakeGPU

    rx6600 = FakeGPU(100302, 0x73FF, (0x0A, 0, 0), 8 * GIB, 16 * GIB)
    _, (a,), selection, _ = plan(machine, [rx6600])
    assert a.plugin is None and not a.usable
    assert a.reason == "no installed plugin runs gfx1032 (RDNA2)"
    assert "hip_rdna2 carries code for gfx1030, gfx1031, not gfx1032" in a.refusals
    assert selection.indices == ()


def test_disabled_plugin_is_named_in_the_reason(machine):
    _, (a,), _, _ = plan(machine, [RX_7900_XTX], STRATA_DISABLE_PLUGINS="hip_rdna3")
    assert a.plugin is None
    assert "hip_rdna3 is disabled: named in STRATA_DISABLE_PLUGINS" in a.reason


def test_override_changes_the_effective_target_and_both_are_shown(machine):
    found, (a,), _, _ = plan(machine, [RADEON_780M], HSA_OVERRIDE_GFX_VERSION="11.0.0")
    assert (a.device.gfx, a.device.physical_gfx) == ("gfx1100", "gfx1103")
    assert a.device.override == "HSA_OVERRIDE_GFX_VERSION=11.0.0"
    assert a.plugin == "hip_rdna3"


def test_per_node_override_counts_the_cpu_node(machine):
    found, _ = machine([RX_7900_XTX, RADEON_780M], HSA_OVERRIDE_GFX_VERSION_2="11.0.0")
    assert [d.gfx for d in found.devices] == ["gfx1100", "gfx1100"]
    assert [d.physical_gfx for d in found.devices] == ["gfx1100", "gfx1103"]


def test_cross_family_override_is_warned_about_and_a_bad_one_ignored(machine):
    found, _ = machine([MI50], HSA_OVERRIDE_GFX_VERSION="10.3.0")
    assert found.problems == (
        "HSA_OVERRIDE_GFX_VERSION=10.3.0 makes a gfx906 (GCN5 (Vega20)) load gfx1030 (RDNA2) code",
    )
    found, _ = machine([MI50], HSA_OVERRIDE_GFX_VERSION="ten")
    assert found.devices[0].gfx == "gfx906"
    assert found.problems[0].startswith("HSA_OVERRIDE_GFX_VERSION: expected MAJOR.MINOR.STEPPING")


def test_visibility_renumbers_and_hides(machine):
    _, assignments, selection, _ = plan(
        machine, [RX_9070_XT, R9700, RX_7900_XTX], ROCR_VISIBLE_DEVICES="2,0"
    )
    assert [a.device.index for a in assignments] == [1, None, 0]
    assert assignments[1].device.hidden_by == "ROCR_VISIBLE_DEVICES=2,0"
    assert not assignments[1].usable
    assert selection.indices == (0,)  # the 7900 XTX: 24 GiB against 16


def test_gpu_choices_are_never_overridden(machine):
    gpus = [RADEON_780M, RX_7900_XTX, R9700]
    assert plan(machine, gpus, DeviceChoice(gpu=0))[2].indices == (0,)
    found, assignments, two, _ = plan(machine, gpus, DeviceChoice(gpus=(2, 1)))
    assert two.indices == (2, 1) and two.roles == {2: "helper", 1: "main"}
    on = {os_name: choose_backend(assignments, DeviceChoice(gpus=(2, 1)), os_name).notes
          for os_name in ("linux", "windows")}  # fmt: skip
    assert on["linux"] == (
        "cards of two families (RDNA3, RDNA4) need a system ROCm 7: AMD's wheels hold one family",
    )
    assert on["windows"] == ()  # the Windows package carries its own runtime
    every = plan(machine, gpus, DeviceChoice(gpus="all"))[2]
    assert every.indices == (2, 1)  # "Every supported card"; integrated ones are not
    assert (
        "integrated Radeon 780M Graphics (HIP 0, gfx1103) skipped: a discrete card can run"
    ) in every.notes
    roles = plan(machine, gpus, DeviceChoice(roles={1: "main", 2: "helper"}))[2]
    assert roles.indices == (2, 1) and roles.roles == {1: "main", 2: "helper"}


def test_choosing_a_device_that_does_not_exist_is_a_user_error(machine):
    with pytest.raises(StrataError, match=r"no HIP device 5 \(visible HIP devices: 0\)"):
        plan(machine, [RX_7900_XTX], DeviceChoice(gpu=5))


def test_choosing_a_card_no_plugin_runs_keeps_the_choice_with_a_note(machine):
    _, _, selection, _ = plan(
        machine, [RX_7900_XTX, MI50], DeviceChoice(gpu=1), STRATA_DISABLE_PLUGINS="gfx906"
    )
    assert selection.indices == (1,)
    assert selection.notes[0].startswith("HIP 1 (gfx906) was chosen but no installed plugin")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1,x", "expected HIP numbers"),
        ("1,1", "each HIP number once"),
    ],
)
def test_parse_gpus_errors(text, message):
    with pytest.raises(StrataError, match=message):
        parse_gpus(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1=boss", "expected N=main or N=helper"),
        ("1=main,0=main", "exactly one main"),
        ("0=helper", "exactly one main"),
        ("0=main,0=helper", "named twice"),
    ],
)
def test_parse_roles_errors(text, message):
    with pytest.raises(StrataError, match=message):
        parse_roles(text)


def test_hip_facts_merge_with_kfd_by_pci_address():
    kfd = DeviceReport(
        "kfd",
        pci="0000:c6:00.0",
        node_id=1,
        gfx="gfx1103",
        wave_size=32,
        vram_bytes=512 << 20,
        gtt_bytes=16 * GIB,
        integrated=True,
        integrated_evidence="gfx1103 exists only as an integrated GPU",
    )
    hip = DeviceReport(
        "hip",
        pci="0000:c6:00.0",
        hip_index=0,
        name="AMD Radeon 780M",
        gfx="gfx1100",
        vram_bytes=16 * GIB,
        integrated=True,
        integrated_evidence="HIP Integrated attribute",
    )
    (facts,) = merge_reports([hip, kfd])
    assert facts["seen_by"] == ("kfd", "hip")
    assert facts["name"] == "AMD Radeon 780M"
    assert facts["gfx"] == "gfx1103"  # HIP reports the overridden target
    assert facts["vram_bytes"] == 512 << 20  # DRM's counter, not HIP's total
    assert facts["integrated_evidence"] == "HIP Integrated attribute"


def test_hip_numbers_are_authoritative_when_the_runtime_answered():
    kfd = [
        DeviceReport("kfd", pci=f"0000:0{i}:00.0", node_id=i + 1, gfx="gfx1201") for i in range(2)
    ]
    hip = [DeviceReport("hip", pci="0000:01:00.0", hip_index=0)]
    devices = build_devices(kfd + hip, {}, [])
    assert [(d.index, d.hidden_by) for d in devices] == [
        (None, "not listed by the HIP runtime"),
        (0, None),
    ]


def _merged_as_before(reports):
    """merge_reports as it was written first, group by group (quadratic): the reference its
    indexed grouping must agree with."""
    groups: list[list[DeviceReport]] = []
    for report in sorted(reports, key=lambda r: r.source != "kfd"):
        for group in groups:
            if any(
                (report.pci and report.pci == r.pci)
                or (not report.pci and report.unique_id and report.unique_id == r.unique_id)
                for r in group
            ):
                group.append(report)
                break
        else:
            groups.append([report])
    order = {"kfd": 0, "pci": 0, "hip": 2, "nvidia": 2}

    def rank(source, field):
        trust = order.get(source, 1)
        return -trust if field in KERNEL_FIRST else trust

    merged = []
    for group in groups:
        facts = {"seen_by": tuple(dict.fromkeys(r.source for r in group))}
        for field in FIELDS:
            known = [r for r in group if getattr(r, field) is not None]
            best = max(known, key=lambda r: rank(r.source, field), default=None)
            facts[field] = getattr(best, field) if best else None
        if facts["integrated"] is not None:
            facts["integrated_evidence"] = max(
                (r for r in group if r.integrated is not None),
                key=lambda r: rank(r.source, "integrated"),
            ).integrated_evidence
        merged.append(facts)
    return merged


REPORTS = st.lists(
    st.builds(
        DeviceReport,
        source=st.sampled_from(["kfd", "pci", "hip", "nvidia", "third_party"]),
        pci=st.sampled_from([None, "0000:03:00.0", "0000:41:00.0", "0000:86:00.0"]),
        unique_id=st.sampled_from([None, "a1", "b2"]),
        name=st.sampled_from([None, "one", "two"]),
        gfx=st.sampled_from([None, "gfx1100", "gfx1201"]),
        vram_bytes=st.sampled_from([None, 1, 2]),
        hip_index=st.sampled_from([None, 0, 1]),
        integrated=st.sampled_from([None, True, False]),
        integrated_evidence=st.sampled_from([None, "kernel", "runtime"]),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(REPORTS)
def test_grouping_by_index_gives_the_answers_of_grouping_group_by_group(reports):
    assert merge_reports(reports) == _merged_as_before(reports)


def _nvml_reports(cards: int) -> list[DeviceReport]:
    """What the PCI walk and NVML report of ``cards`` NVIDIA cards, each at its own address."""
    reports = []
    for n in range(cards):
        pci = f"{n >> 13:04x}:{(n >> 5) & 0xFF:02x}:{n & 0x1F:02x}.0"
        reports.append(DeviceReport("pci", pci=pci, vendor="nvidia"))
        reports.append(DeviceReport("nvidia", pci=pci, cuda_index=n, vendor="nvidia"))
    return reports


class CountedReport:
    """A report whose every fact read is counted (``reads``)."""

    reads = 0

    def __init__(self, report):
        self._report = report

    def __getattr__(self, name):
        CountedReport.reads += 1
        return getattr(self._report, name)


def test_grouping_is_linear_in_the_cards():
    """Four times the cards take four times the reads of their facts (grouping group by
    group took sixteen: 10,000 cards 32 s), counted, not timed."""

    def reads(count):
        CountedReport.reads = 0
        reports = [CountedReport(report) for report in _nvml_reports(count)]
        assert len(merge_reports(reports)) == count
        return CountedReport.reads

    assert reads(10_000) == 4 * reads(2_500)


def test_the_wave64_plugin_refuses_wave32_cards(machine):
    _, (a,), _, _ = plan(machine, [RX_7900_XTX])
    assert dict(a.claims)["gfx906"].reason == "is a wave64 build for gfx906; gfx1100 is wave32"
    assert dict(a.claims)["hip_rdna4"].reason == ("carries code for gfx1200, gfx1201, not gfx1100")


def test_a_plugin_not_installed_is_named_with_the_command_that_installs_it(strata_env):
    """`strata` on the public package index is another project: the hint names the plugin's
    distribution and installs it from the checkout's wheelhouse (README, "Installing like a
    user"), never `strata[rdna3]` from an index."""
    from strata_core.api.manager import PluginManager
    from strata_core.testing import device_for

    manager = PluginManager.holding({}, strata_env)  # the core alone: no plugin distribution
    (a,), _ = assign(manager, [device_for("gfx1100")])
    assert a.plugin is None
    assert a.reason == (
        "no installed plugin runs gfx1100 (RDNA3): strata-hip-rdna3 is not installed (from a "
        "checkout: scripts/build-wheels.sh && pip install --no-index --find-links dist "
        "strata-hip-rdna3)"
    )
    assert "strata[" not in a.reason


def test_a_card_is_named_from_the_card_before_the_plugins_list(machine, tmp_path):
    """DRM's product name, then libdrm's table, then the plugin's names by PCI id, then the
    family; the plugin's list never overrides what the card itself says."""
    from strata_core.api.records import DetectionContext
    from strata_core.plan.devices import scan

    ids = tmp_path / "amdgpu.ids"
    ids.write_text("1.0.0\n7551,\tC0,\tAMD Radeon AI PRO R9700 (from libdrm)\n")
    branded = attrs.evolve(
        R9700, pci=(0x04, 0, 0), unique_id=1, product_name="Radeon AI PRO R9700 Creator"
    )
    unnamed = attrs.evolve(RX_9070_XT, revision=None)  # 7550 has three names: none fits
    found, manager = machine([branded, R9700, unnamed])
    assert [d.name for d in found.devices] == [
        "Radeon AI PRO R9700 Creator",
        "Radeon AI PRO R9700",
        "an RDNA4 card",
    ]
    root = tmp_path / "sys0"  # the tree the machine fixture wrote
    with_ids = scan(manager, DetectionContext(sysfs=root, amdgpu_ids=ids, hip_probe=False))
    assert [d.name for d in with_ids.devices][:2] == [
        "Radeon AI PRO R9700 Creator",
        "Radeon AI PRO R9700 (from libdrm)",
    ]


def test_the_claims_are_asked_once_per_target_and_wave_however_many_devices():
    """The claim hook decides on the target and wave alone (its contract), so 3,000 devices
    of three architectures are three questions to each plugin, and each device gets its
    architecture's answer."""
    from strata_core.api.manager import PluginManager
    from strata_core.testing import device_for

    manager = PluginManager.discover({})
    asked: list[tuple[str, int | None]] = []
    claims = manager.claims

    def counted(device):
        asked.append((device.gfx, device.wave_size))
        return claims(device)

    manager.claims = counted
    kinds = [device_for(target) for target in ("gfx1100", "gfx1201", "gfx906")]
    devices = [attrs.evolve(kinds[n % 3], index=n) for n in range(3000)]
    assignments, _ = assign(manager, devices)
    assert sorted(asked) == sorted({(d.gfx, d.wave_size) for d in devices})
    assert [a.plugin for a in assignments[:3]] == ["hip_rdna3", "hip_rdna4", "gfx906"]
    assert [a.plugin for a in assignments] == [a.plugin for a in assignments[:3]] * 1000
