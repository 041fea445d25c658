"""Built-in detector: NVIDIA GPUs among the PCI functions under a sysfs root
(``bus/pci/devices/*``: vendor 0x10de and a display class), so that a card is seen, and its
PCI address known, with or without a driver. What the card is comes from the CUDA driver
(strata_core.detect.nvidia)."""

from __future__ import annotations

from pathlib import Path

from ..answer_cache import Recorder
from ..hookspec import hookimpl
from ..records import Detection, DetectionContext, DeviceReport

strata_api_version = 1

DEVICES_DIR = Path("bus/pci/devices")
NVIDIA_VENDOR = 0x10DE
DISPLAY_CLASS = 0x03  # the PCI base class of VGA, XGA, 3D and other display controllers


@hookimpl
def strata_detect_devices(context: DetectionContext) -> Detection:
    return walk(context.sysfs, context.recorder)


def walk(sysfs: Path, read: Recorder) -> Detection:
    folder = sysfs / DEVICES_DIR
    reports, problems = [], []
    for name in read.list_dir(folder):
        values = {}
        for field in ("vendor", "class"):
            path = folder / name / field
            try:
                values[field] = int(read.read_text(path).strip(), 16)
            except (OSError, UnicodeDecodeError):
                break
            except ValueError:
                problems.append(f"{path}: expected a hexadecimal number")
                break
        if len(values) < 2:
            continue
        if values["vendor"] == NVIDIA_VENDOR and values["class"] >> 16 == DISPLAY_CLASS:
            reports.append(DeviceReport(source="pci", pci=name.lower(), vendor="nvidia"))
    return Detection(reports=tuple(reports), problems=tuple(problems))
