"""Which vendors' GPUs a sysfs tree shows, so that no vendor's runtime is asked without its
hardware (ollama reads sysfs first in the same way): AMD by a KFD GPU node or a PCI display
function of vendor 0x1002, NVIDIA by a PCI display function of vendor 0x10de."""

from __future__ import annotations

import re
from pathlib import Path

from ..answer_cache import Recorder
from ..bounded import SYSFS_ATTRIBUTE

PCI_DEVICES = Path("bus/pci/devices")
KFD_NODES = Path("class/kfd/kfd/topology/nodes")
AMD_VENDOR = 0x1002
NVIDIA_VENDOR = 0x10DE
DISPLAY_CLASS = 0x03  # the PCI base class of VGA, XGA, 3D and other display controllers
SKIPPED = "PCI function skipped"


def display_functions(sysfs: Path, read: Recorder) -> tuple[list[tuple[str, int]], list[str]]:
    """(PCI address, vendor) of every display function, and the malformed files met."""
    folder = sysfs / PCI_DEVICES
    found, problems = [], []
    for name in read.list_dir(folder):
        values = {}
        for field in ("vendor", "class"):
            path = folder / name / field
            try:
                text = read.read_text(path, SYSFS_ATTRIBUTE).strip()
            except FileNotFoundError:
                break
            except OSError as exc:
                problems.append(f"{path}: cannot read ({exc.strerror or exc}); {SKIPPED}")
                break
            except UnicodeDecodeError as exc:
                problems.append(f"{path}: not UTF-8 text (byte {exc.start}); {SKIPPED}")
                break
            if not re.fullmatch(r"0[xX][0-9a-fA-F]+|[0-9a-fA-F]+", text):
                problems.append(f"{path}: expected a hexadecimal number, got {text[:40]!r}")
                break
            values[field] = int(text, 16)
        if len(values) == 2 and values["class"] >> 16 == DISPLAY_CLASS:
            found.append((name.lower(), values["vendor"]))
    return found, problems


def _kfd_gpu_node(sysfs: Path, read: Recorder) -> str | None:
    """The first KFD node whose gfx_target_version is not 0 (CPU nodes have 0)."""
    folder = sysfs / KFD_NODES
    for name in read.list_dir(folder):
        try:
            text = read.read_text(folder / name / "properties", SYSFS_ATTRIBUTE)
        except (OSError, UnicodeDecodeError):
            continue
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "gfx_target_version" and value.strip() not in ("", "0"):
                return str(folder / name)
    return None


def amd_gpu(sysfs: Path, read: Recorder) -> str | None:
    """What shows an AMD GPU under ``sysfs``, in words; None where nothing does."""
    node = _kfd_gpu_node(sysfs, read)
    if node is not None:
        return f"KFD GPU node {node}"
    return function_of(sysfs, read, AMD_VENDOR)


def nvidia_gpu(sysfs: Path, read: Recorder) -> str | None:
    """What shows an NVIDIA GPU under ``sysfs``, in words; None where nothing does."""
    return function_of(sysfs, read, NVIDIA_VENDOR)


def function_of(sysfs: Path, read: Recorder, vendor: int) -> str | None:
    """The first display function of ``vendor`` under ``sysfs``, in words; None if none."""
    functions, _ = display_functions(sysfs, read)
    address = next((name for name, v in functions if v == vendor), None)
    return f"PCI display function {address} (vendor 0x{vendor:04x})" if address else None
