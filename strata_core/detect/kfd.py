"""Built-in detector: the kernel's KFD topology and the amdgpu DRM counters under a sysfs root.

Format facts, as the kernel's node_show() (drivers/gpu/drm/amd/amdkfd/kfd_topology.c) prints
them: one ``name value`` line per field, all decimal, in a fixed order; CPU nodes have
``gfx_target_version 0``; ``location_id`` is the PCI bus<<8 | devfn. Kernels before
``gfx_target_version`` was printed (about 4.19 to 5.x) show a CPU node as ``simd_count 0`` and
a GPU node with SIMDs but without the field; old ACPI-CRAT APUs (Raven) show one node with
both CPU cores and SIMDs.
"""

from __future__ import annotations

from pathlib import Path

from .. import log
from ..answer_cache import Recorder
from ..api.hookspec import hookimpl
from ..api.records import Detection, DetectionContext, DeviceReport
from ..bounded import SYSFS_ATTRIBUTE
from ..digits import is_digits
from .amdgpu_ids import MarketingNames, read_names
from .hardware import AMD_VENDOR, function_of
from .recording import recorder_of

strata_api_version = 2

NODES_DIR = Path("class/kfd/kfd/topology/nodes")
GIB = 1 << 30
#: more memory than any GPU has: a counter past it is a malformed file
MAX_MEMORY_BYTES = 1 << 50
#: HSA_CAP_FLAGS_COHERENTHOSTACCESS of a node's ``capability``: the kernel sets it where the
#: GPU and the CPU share memory coherently (kfd_topology.c: gmc.is_app_apu, the MI300A, or
#: xgmi.connected_to_cpu)
COHERENT_HOST_ACCESS = 0x10000000
#: malformed lines of one file said one by one; the rest are counted
MAX_LINE_PROBLEMS = 3


@hookimpl
def strata_detect_devices(context: DetectionContext) -> Detection:
    return walk(context.sysfs, recorder_of(context), context.amdgpu_ids)


def walk(
    sysfs: Path, recorder: Recorder | None = None, amdgpu_ids: Path | None = None
) -> Detection:
    """The GPU nodes of the KFD topology under ``sysfs``, each named by its DRM
    ``product_name`` or else by the libdrm table at ``amdgpu_ids`` (read once, where a node
    needs it)."""
    read = recorder or Recorder()
    nodes_dir = sysfs / NODES_DIR
    read.list_dir(sysfs / "class/drm")
    if not read.is_dir(nodes_dir):
        missing = f"no KFD topology at {nodes_dir}"
        if function_of(sysfs, read, AMD_VENDOR) is None:  # no AMD hardware: said in -v only
            log.debug(f"{missing}; no AMD PCI display function either", kind="detection")
            return Detection()
        return Detection(notes=(f"{missing} (is the amdgpu driver loaded?)",))
    reports: list[DeviceReport] = []
    problems: list[str] = []
    nodes = [nodes_dir / name for name in read.list_dir(nodes_dir) if is_digits(name)]
    names = _Names(amdgpu_ids, read)
    for node in sorted(nodes, key=lambda p: int(p.name)):
        report = _read_node(sysfs, node, problems, read, names)
        if report is not None:
            reports.append(report)
    return Detection(reports=tuple(reports), problems=tuple(problems))


def parse_properties(path: Path, problems: list[str], read: Recorder) -> dict[str, int] | None:
    """The fields of one ``properties`` file; None when it cannot be read at all. A line that
    is not ``name value`` with a decimal value is a problem for this file only; many such
    lines are one problem that says how many."""
    try:
        text = read.read_text(path, SYSFS_ATTRIBUTE)
    except OSError as exc:
        problems.append(f"{path}: cannot read ({exc.strerror or exc}); node skipped")
        return None
    except UnicodeDecodeError:
        problems.append(f"{path}: not text; node skipped")
        return None
    fields: dict[str, int] = {}
    bad: list[str] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2 or not is_digits(parts[1]):
            bad.append(f"{path}:{lineno}: expected 'name value', got {line.strip()[:80]!r}")
            continue
        fields[parts[0]] = int(parts[1])
    problems += bad[:MAX_LINE_PROBLEMS]
    if len(bad) > MAX_LINE_PROBLEMS:
        problems.append(f"{path}: {len(bad) - MAX_LINE_PROBLEMS} more malformed lines")
    if not fields:
        problems.append(f"{path}: empty; node skipped")
        return None
    return fields


def out_of_range(fields: dict[str, int]) -> str | None:
    """What in a GPU node's fields cannot be true of a real card, or None."""
    if fields.get("domain", 0) > 0xFFFF:
        return f"domain {fields['domain']} is past a PCI domain's 16 bits"
    if fields.get("location_id", 0) > 0xFFFF:
        return f"location_id {fields['location_id']} is past a PCI bus/devfn's 16 bits"
    if fields.get("wave_front_size") not in (None, 32, 64):
        return f"wave_front_size {fields['wave_front_size']} is neither 32 nor 64"
    return None


def decode_gfx_target_version(version: int) -> str:
    """110000 -> gfx1100, 120001 -> gfx1201, 90006 -> gfx906, 110501 -> gfx1151."""
    major, minor, stepping = version // 10000, (version // 100) % 100, version % 100
    if major == 0 or minor > 0xF or stepping > 0xF:
        raise ValueError(f"gfx_target_version {version} does not decode to a gfx target")
    return f"gfx{major}{minor:x}{stepping:x}"


def pci_address(domain: int, location_id: int) -> str:
    return (
        f"{domain:04x}:{location_id >> 8:02x}:{(location_id >> 3) & 0x1F:02x}.{location_id & 7:x}"
    )


class _Names:
    """The libdrm table of one walk, read at the first node that needs a name from it."""

    def __init__(self, path: Path | None, read: Recorder) -> None:
        self.path, self.read = path, read
        self.names: MarketingNames | None = None

    def name_of(self, device_id: int | None, revision: int | None) -> str | None:
        if device_id is None or self.path is None:
            return None
        if self.names is None:
            self.names = read_names(self.path, self.read)
        return self.names.name_of(device_id, revision)


def _read_node(
    sysfs: Path, node: Path, problems: list[str], read: Recorder, names: _Names
) -> DeviceReport | None:
    path = node / "properties"
    if "properties" not in read.list_dir(node):
        problems.append(f"{node}: no properties file; node skipped")
        return None
    fields = parse_properties(path, problems, read)
    if fields is None:
        return None
    simds = fields.get("simd_count", 0)
    version = fields.get("gfx_target_version")
    if version is None and simds == 0:
        return None  # a CPU node of a kernel that does not print gfx_target_version
    if version == 0:
        if simds > 0:
            problems.append(
                f"{path}: gfx_target_version 0 on a node with {simds} SIMDs; node skipped"
            )
        return None  # a CPU node
    impossible = out_of_range(fields)
    if impossible:
        problems.append(f"{path}: {impossible}; node skipped")
        return None
    gfx = None  # a GPU node of a kernel that does not print gfx_target_version
    if version is not None:
        try:
            gfx = decode_gfx_target_version(version)
        except ValueError as exc:
            problems.append(f"{path}: {exc}; node skipped")
            return None
    pci = None
    if "location_id" in fields:
        pci = pci_address(fields.get("domain", 0), fields["location_id"])
    unique_id = f"{fields['unique_id']:016x}" if fields.get("unique_id") else None
    drm = _drm_device_dir(sysfs, fields.get("drm_render_minor"), pci, read)
    vram = _read_counter(drm, "mem_info_vram_total", problems, read)
    gtt = _read_counter(drm, "mem_info_gtt_total", problems, read)
    integrated, evidence = _integrated_evidence(node, fields, drm, vram, gtt, read)
    device_id = fields.get("device_id") or None
    revision = pci_revision(_read_text(drm, "revision", read))
    return DeviceReport(
        source="kfd",
        pci=pci,
        unique_id=unique_id,
        node_id=int(node.name),
        name=_read_text(drm, "product_name", read) or names.name_of(device_id, revision),
        gfx=gfx,
        device_id=device_id,
        revision=revision,
        wave_size=fields.get("wave_front_size") or None,
        vram_bytes=vram,
        gtt_bytes=gtt,
        integrated=integrated,
        integrated_evidence=evidence,
    )


def pci_revision(text: str | None) -> int | None:
    """The PCI revision of a DRM device's ``revision`` file (``0xc8``); None where the file
    is missing or holds anything else."""
    if text is None or not text.lower().startswith("0x"):
        return None
    digits = text[2:]
    if not 1 <= len(digits) <= 2 or any(c not in "0123456789abcdefABCDEF" for c in digits):
        return None
    return int(digits, 16)


def _drm_device_dir(
    sysfs: Path, render_minor: int | None, pci: str | None, read: Recorder
) -> Path | None:
    drm = sysfs / "class/drm"
    entries = read.list_dir(drm)
    if render_minor and f"renderD{render_minor}" in entries:
        candidate = drm / f"renderD{render_minor}" / "device"
        if read.is_dir(candidate):
            return candidate
    if pci is None:
        return None
    for card in sorted(drm / e / "device" for e in entries if e.startswith("card")):
        if f"PCI_SLOT_NAME={pci}" in (_read_text(card, "uevent", read) or "").split("\n"):
            return card
    return None


def _read_text(directory: Path | None, name: str, read: Recorder) -> str | None:
    if directory is None:
        return None
    try:
        return read.read_text(directory / name, SYSFS_ATTRIBUTE).strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _read_counter(
    directory: Path | None, name: str, problems: list[str], read: Recorder
) -> int | None:
    if directory is None:
        return None
    path = directory / name
    try:
        text = read.read_text(path, SYSFS_ATTRIBUTE).strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        problems.append(f"{path}: cannot read ({exc.strerror or exc})")
        return None
    except UnicodeDecodeError as exc:
        problems.append(f"{path}: not UTF-8 text (byte {exc.start})")
        return None
    value = int(text) if is_digits(text) else None
    if value is None or value > MAX_MEMORY_BYTES:
        problems.append(f"{directory / name}: expected a byte count up to 1 PiB, got {text[:40]!r}")
        return None
    return value


def _integrated_evidence(
    node: Path,
    fields: dict[str, int],
    drm: Path | None,
    vram: int | None,
    gtt: int | None,
    read: Recorder,
) -> tuple[bool | None, str | None]:
    cores = fields.get("cpu_cores_count", 0)
    if cores > 0:  # one node for the CPU and the GPU: an APU, whatever the DRM files say
        return True, (
            f"KFD node {node.name} has {cores} CPU cores beside its "
            f"{fields.get('simd_count', 0)} SIMDs (an APU)"
        )
    if fields.get("capability", 0) & COHERENT_HOST_ACCESS:
        return True, (
            f"KFD node {node.name}'s GPU shares coherent memory with the CPU (capability "
            "COHERENTHOSTACCESS: an APU such as the MI300A, or a GPU on its CPU's xGMI)"
        )
    for marker in ("board_info", "mem_info_vram_vendor"):
        if drm is not None and marker in read.list_dir(drm):
            return False, f"DRM {marker} present (amdgpu hides it on APUs)"
    if vram is not None and gtt is not None:
        if vram <= 4 * GIB and gtt >= 8 * GIB and gtt >= 4 * vram:
            return True, f"VRAM {vram / GIB:.1f} GiB against GTT {gtt / GIB:.1f} GiB"
        return False, f"VRAM {vram / GIB:.1f} GiB against GTT {gtt / GIB:.1f} GiB"
    return None, None
