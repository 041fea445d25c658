from __future__ import annotations

import itertools

import pytest

from strata_core.devices import DeviceScan, scan
from strata_core.manager import PluginManager
from strata_core.records import DetectionContext
from strata_core.testing.pytest_plugin import clean_environment
from strata_core.testing.sysfs import write_sysfs


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    """The process environment without any GPU runtime or strata variable, with the answer
    cache in this test's own folder (the HIP probe stays on)."""
    return clean_environment(tmp_path / "answer-cache")


@pytest.fixture
def machine(tmp_path, env):
    """Detect the devices of a fake machine: ``machine([RX_7900_XTX], **extra_env)``."""

    trees = itertools.count()

    def detect(gpus, cpu_nodes=1, **extra_env) -> tuple[DeviceScan, PluginManager]:
        root = write_sysfs(tmp_path / f"sys{next(trees)}", gpus, cpu_nodes)
        full_env = env | extra_env
        manager = PluginManager.discover(full_env)
        context = DetectionContext(sysfs=root, env=full_env, hip_probe=False)
        return scan(manager, context), manager

    return detect
