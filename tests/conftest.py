from __future__ import annotations

import itertools
import os

import pytest

from strata_core.detect.visibility import is_runtime_variable
from strata_core.devices import DeviceScan, scan
from strata_core.manager import PluginManager
from strata_core.records import DetectionContext
from strata_core.testing.sysfs import write_sysfs


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    """The process environment without any GPU runtime or strata variable, with the answer
    cache in this test's own folder."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not is_runtime_variable(k) and not k.startswith("STRATA_")
    }
    return clean | {"STRATA_CACHE_DIR": str(tmp_path / "answer-cache")}


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
