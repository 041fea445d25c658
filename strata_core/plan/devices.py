"""From detector reports to :class:`Device` records: merge, name, visibility, overrides."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .. import archdb
from ..answer_cache import Recorder
from ..api import arch
from ..api.arch import Architectures, ArchRecord
from ..api.manager import PluginManager
from ..api.records import DetectionContext, Device, DeviceReport
from ..detect.recording import recorder_of
from ..detect.visibility import override_for, parse_override, visible_devices

#: where no plugin's records are at hand: every target gets the fallback
NO_RECORDS = Architectures()
#: the target of an NVIDIA card that NVML did not describe
UNKNOWN_NVIDIA = archdb.NVIDIA_PREFIX + "unknown"
#: Facts where KFD (the kernel, and its DRM counters) is trusted over the HIP runtime:
#: the physical target (HIP reports the overridden one) and memory sizes.
KERNEL_FIRST = frozenset({"gfx", "vram_bytes", "gtt_bytes", "node_id", "unique_id"})
FIELDS = [f.name for f in attrs.fields(DeviceReport) if f.name != "source"]


@attrs.frozen
class DeviceScan:
    devices: tuple[Device, ...]
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def architectures(manager: PluginManager, recorder: Recorder) -> Architectures:
    """What the plugins say their targets are; the files they read it from are inputs of the
    answer, as the plugins' code is."""
    archs = Architectures(manager.arch_records())
    for path in arch.READ_FILES:
        recorder.stat(path)
    return archs


def scan(manager: PluginManager, context: DetectionContext) -> DeviceScan:
    """Ask every detector plugin, then merge what they saw into devices, each with the record
    of its target that a plugin gives."""
    recorder = recorder_of(context)
    archs = architectures(manager, recorder)
    answers = manager.detections(context)
    for name, _ in answers:
        if not manager.records[name].builtin:
            recorder.refuse(f"detector plugin {name} reads what strata cannot check")
    reports = [r for _, d in answers for r in d.reports]
    problems = [p for _, d in answers for p in d.problems]
    notes = [n for _, d in answers for n in d.notes]
    complete = {vendor for _, d in answers for vendor in d.complete_for}
    devices = build_devices(reports, context.env, problems, "nvidia" in complete, archs, notes)
    return DeviceScan(tuple(devices), tuple(problems), tuple(notes))


def _runtime_trust(source: str) -> int:
    """How far a detector is trusted for what a runtime knows best (the name, the index, ...):
    the runtimes most, a third-party detector next, the kernel least. KERNEL_FIRST facts
    trust them the other way round."""
    return {"kfd": 0, "pci": 0, "hip": 2, "nvidia": 2}.get(source, 1)


def merge_reports(reports: Sequence[DeviceReport]) -> list[dict[str, Any]]:
    """Group reports about one GPU (same PCI address, else same unique id) and pick each
    fact from the most trusted detector that knows it (the first such report where two are
    as trusted). KFD order comes first."""
    merged = []
    for group in group_reports(reports):
        runtime_first = sorted(group, key=lambda r: -_runtime_trust(r.source))
        facts: dict[str, Any] = {"seen_by": tuple(dict.fromkeys(r.source for r in group))}
        facts |= _trusted_facts(group, runtime_first)
        if facts["integrated"] is not None:
            facts["integrated_evidence"] = next(
                r.integrated_evidence for r in runtime_first if r.integrated is not None
            )
        merged.append(facts)
    return merged


def _trusted_facts(
    group: Sequence[DeviceReport], runtime_first: Sequence[DeviceReport]
) -> dict[str, Any]:
    """Each fact of FIELDS from the most trusted report of ``group`` that knows it."""
    if len(group) == 1:
        return {field: getattr(group[0], field) for field in FIELDS}
    kernel_first = sorted(group, key=lambda r: _runtime_trust(r.source))
    return {
        field: next(
            (
                value
                for r in (kernel_first if field in KERNEL_FIRST else runtime_first)
                if (value := getattr(r, field)) is not None
            ),
            None,
        )
        for field in FIELDS
    }


def group_reports(reports: Sequence[DeviceReport]) -> list[list[DeviceReport]]:
    """The reports about each GPU, KFD's first, in the order each GPU was first reported: a
    report joins the first group holding its PCI address, or, having none, the first holding
    its unique id. Each group is found through an index of the keys its members carry, so
    that grouping is linear in the reports (NVML may report any number of devices)."""
    groups: list[list[DeviceReport]] = []
    by_pci: dict[str, int] = {}
    by_unique_id: dict[str, int] = {}
    for report in sorted(reports, key=lambda r: r.source != "kfd"):
        if report.pci:
            found = by_pci.get(report.pci)
        else:
            found = by_unique_id.get(report.unique_id) if report.unique_id else None
        if found is None:
            found = len(groups)
            groups.append([])
        groups[found].append(report)
        for key, index in ((report.pci, by_pci), (report.unique_id, by_unique_id)):
            if key and index.get(key, found) >= found:
                index[key] = found  # the first group that holds the key
    return groups


def build_devices(
    reports: Sequence[DeviceReport],
    env: Mapping[str, str],
    problems: list[str],
    cuda_listed: bool = False,
    archs: Architectures = NO_RECORDS,
    notes: list[str] | None = None,
) -> list[Device]:
    """Devices from the detectors' reports; ``cuda_listed``: the CUDA driver answered, so
    its list is every visible NVIDIA card. An AMD GPU whose architecture no detector gave
    (a kernel whose KFD predates gfx_target_version) is named from its PCI device id where a
    plugin lists it, and said in ``notes``."""
    merged = merge_reports(reports)
    nvidia = [m for m in merged if m["vendor"] == "nvidia"]
    amd = [m for m in merged if m["vendor"] != "nvidia"]
    for facts in amd:
        if not facts["gfx"]:
            facts["gfx"], line = _unreported(facts, archs)
            if notes is not None:
                notes.append(line)
    return _amd_devices(amd, env, problems, archs) + _nvidia_devices(nvidia, cuda_listed, archs)


#: the target of an AMD GPU whose architecture the kernel's KFD does not report
UNREPORTED = "unreported"


def _unreported(facts: Mapping[str, Any], archs: Architectures) -> tuple[str, str]:
    """The target of an AMD GPU whose architecture no detector reports (the one whose plugin
    names its PCI device id, else UNREPORTED), and the line that says so."""
    device_id = facts["device_id"]
    found = archs.by_device_id(device_id) if device_id is not None else None
    where = f"PCI {facts['pci']}" if facts["pci"] else "a GPU node"
    card = f"{where}, device 0x{device_id:04x}" if device_id is not None else where
    line = f"{facts['name'] or 'an AMD GPU'} ({card}): this kernel's KFD does not report the "
    line += "architecture"
    if found is None:
        return UNREPORTED, f"{line}; a newer kernel (or HSA_OVERRIDE_GFX_VERSION) names it"
    named = f"{found.described_by} names device 0x{device_id:04x} a {found.target}"
    return found.target, f"{line}; {named}"


def card_name(facts: Mapping[str, Any], arch: ArchRecord) -> str:
    """A card's name: what a detector read (the runtime's name, DRM's product name, libdrm's
    amdgpu.ids), else the name the target's plugin gives its PCI device id, else the
    architecture's, said as such ("an RDNA3 card": every line that names a card gives its
    target beside it), never a guess at one product."""
    named = facts["name"] or arch.name_of(facts["device_id"], facts["revision"])
    if named:
        return str(named)
    if not arch.described_by and not arch.cards:
        return "an AMD GPU"
    family = arch.family
    spoken_vowel = family[:2].isupper() and family[0] in "AEFHILMNORSX"
    article = "an" if spoken_vowel or family[0] in "AEIOU" else "a"
    return f"{article} {family} card"


def _nvidia_devices(
    merged: list[dict[str, Any]], listed: bool, archs: Architectures
) -> list[Device]:
    """NVIDIA cards by CUDA ordinal. Where NVML answered (``listed``), its reports carry the
    ordinals with CUDA_VISIBLE_DEVICES applied, and a card it did not report is hidden;
    without NVML the cards are known by PCI only, in PCI order, and what they are is
    unknown."""
    devices = []
    for position, facts in enumerate(sorted(merged, key=lambda m: m["pci"] or "")):
        index, hidden_by = facts["cuda_index"], None
        if not listed:
            index = position
        elif index is None:
            hidden_by = facts["hidden_by"] or "not listed by NVML"
        target = facts["gfx"] or UNKNOWN_NVIDIA
        arch = archs.of(target)
        devices.append(
            Device(
                index=index,
                name=facts["name"] or f"NVIDIA GPU at {facts['pci'] or 'an unknown address'}",
                gfx=target,
                physical_gfx=target,
                family=arch.family,
                wave_size=facts["wave_size"] or 32,
                vram_bytes=facts["vram_bytes"],
                integrated=bool(facts["integrated"]),
                integrated_evidence=facts["integrated_evidence"] or "NVML",
                pci=facts["pci"],
                seen_by=facts["seen_by"],
                hidden_by=hidden_by,
                vendor="nvidia",
                arch=arch,
            )
        )
    return devices


def _amd_devices(
    merged: list[dict[str, Any]],
    env: Mapping[str, str],
    problems: list[str],
    archs: Architectures,
) -> list[Device]:
    hip_indexed = any(m["hip_index"] is not None for m in merged)
    visibility = visible_devices([m["unique_id"] for m in merged], env)
    hip_number = {position: number for number, position in enumerate(visibility.order)}
    devices = []
    for position, facts in enumerate(merged):
        if hip_indexed:
            index = facts["hip_index"]
            hidden_by = None if index is not None else "not listed by the HIP runtime"
        else:
            index = hip_number.get(position)
            hidden_by = visibility.hidden.get(position)
        devices.append(_device(facts, index, hidden_by, env, problems, archs))
    return devices


def _device(
    facts: dict[str, Any],
    index: int | None,
    hidden_by: str | None,
    env: Mapping[str, str],
    problems: list[str],
    archs: Architectures,
) -> Device:
    physical = facts["gfx"]
    effective, override = physical, None
    found = override_for(facts["node_id"], env)
    if found is not None:
        key, value = found
        try:
            effective = parse_override(value)
            override = f"{key}={value}"
        except ValueError as exc:
            problems.append(f"{key}: {exc}; ignored")
    arch, physical_arch = archs.of(effective), archs.of(physical)
    if effective != physical and arch.family != physical_arch.family:
        problems.append(
            f"{override} makes a {physical} ({physical_arch.family}) load "
            f"{effective} ({arch.family}) code"
        )
    integrated = facts["integrated"]
    evidence = facts["integrated_evidence"]
    if physical_arch.integrated_only and not (integrated and "hip" in facts["seen_by"]):
        integrated, evidence = True, f"{physical} exists only as an integrated GPU"
    elif integrated is None:
        integrated, evidence = False, "no evidence of an integrated GPU"
    return Device(
        index=index,
        name=card_name(facts, physical_arch),
        gfx=effective,
        physical_gfx=physical,
        family=arch.family,
        wave_size=facts["wave_size"] or physical_arch.wave_size,
        vram_bytes=facts["vram_bytes"],
        integrated=integrated,
        integrated_evidence=evidence,
        pci=facts["pci"],
        unique_id=facts["unique_id"],
        node_id=facts["node_id"],
        gtt_bytes=facts["gtt_bytes"],
        seen_by=facts["seen_by"],
        override=override,
        hidden_by=hidden_by,
        arch=arch,
    )


def device_for(
    gfx: str,
    *,
    archs: Architectures = NO_RECORDS,
    wave_size: int | None = None,
    integrated: bool | None = None,
    evidence: str | None = None,
    seen_by: tuple[str, ...] = (),
    index: int = 0,
) -> Device:
    """A card of ``gfx`` that is not in this PC, with its record in ``archs`` (an undescribed
    target is wave32 unless told; an integrated-only target is integrated; an sm_* target is
    an NVIDIA card)."""
    arch = archs.of(gfx)
    nvidia = archdb.compute_capability(gfx) is not None
    if integrated is None:
        integrated = arch.integrated_only
    return Device(
        index=index,
        name=" / ".join(arch.cards) or f"a {gfx} card",
        gfx=gfx,
        physical_gfx=gfx,
        family=arch.family,
        wave_size=wave_size or arch.wave_size or 32,
        vram_bytes=None,
        integrated=integrated,
        integrated_evidence=evidence
        or ("an integrated-only target" if integrated else "planned as a discrete card"),
        seen_by=seen_by,
        vendor="nvidia" if nvidia else "amd",
        arch=arch,
    )
