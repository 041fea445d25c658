"""Helpers for testing strata and its plugins without AMD hardware.

Registered as a pytest plugin (its fixtures: strata_core.testing.pytest_plugin). The public
helpers are imported from here: fake cards and sysfs trees, a manager holding only the plugins
given, a device for any target, the plan a plugin makes, and the conformance check.
"""

from .conformance import check_plugin
from .plugins import device_for, manager_for, plan_for
from .sysfs import FakeGPU, fake_gpu, gfx_target_version, write_nvidia_gpu, write_sysfs

__all__ = [
    "FakeGPU",
    "check_plugin",
    "device_for",
    "fake_gpu",
    "gfx_target_version",
    "manager_for",
    "plan_for",
    "write_nvidia_gpu",
    "write_sysfs",
]
