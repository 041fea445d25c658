"""Built-in detector: NVIDIA GPUs among the PCI functions under a sysfs root
(``bus/pci/devices/*``: vendor 0x10de and a display class), so that a card is seen, and its
PCI address known, with or without a driver. What the card is comes from NVML
(strata_core.detect.nvidia)."""

from __future__ import annotations

from pathlib import Path

from ..answer_cache import Recorder
from ..api.hookspec import hookimpl
from ..api.records import Detection, DetectionContext, DeviceReport
from .hardware import NVIDIA_VENDOR, display_functions
from .recording import recorder_of

strata_api_version = 2


@hookimpl
def strata_detect_devices(context: DetectionContext) -> Detection:
    return walk(context.sysfs, recorder_of(context))


def walk(sysfs: Path, read: Recorder) -> Detection:
    functions, problems = display_functions(sysfs, read)
    reports = tuple(
        DeviceReport(source="pci", pci=name, vendor="nvidia")
        for name, vendor in functions
        if vendor == NVIDIA_VENDOR
    )
    return Detection(reports=reports, problems=tuple(problems))
