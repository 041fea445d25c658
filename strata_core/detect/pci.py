"""Built-in detector: NVIDIA GPUs among the PCI functions under a sysfs root
(``bus/pci/devices/*``: vendor 0x10de and a display class), so that a card is seen, and its
PCI address known, with or without a driver. What the card is comes from the CUDA driver
(strata_core.detect.nvidia)."""

from __future__ import annotations

import re
from pathlib import Path

from ..answer_cache import Recorder
from ..hookspec import hookimpl
from ..records import Detection, DetectionContext, DeviceReport

strata_api_version = 1

DEVICES_DIR = Path("bus/pci/devices")
NVIDIA_VENDOR = 0x10DE
DISPLAY_CLASS = 0x03  # the PCI base class of VGA, XGA, 3D and other display controllers
SKIPPED = "PCI function skipped"


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
                text = read.read_text(path).strip()
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
        if len(values) < 2:
            continue
        if values["vendor"] == NVIDIA_VENDOR and values["class"] >> 16 == DISPLAY_CLASS:
            reports.append(DeviceReport(source="pci", pci=name.lower(), vendor="nvidia"))
    return Detection(reports=tuple(reports), problems=tuple(problems))
