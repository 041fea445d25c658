"""The pytest plugin of strata (entry point ``pytest11: strata``): fixtures for testing an
architecture plugin without AMD hardware. See docs/writing-a-plugin.md."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from ..api.manager import PluginManager
from .sysfs import FakeGPU, fake_gpu, write_sysfs


def clean_environment(cache_dir: Path) -> dict[str, str]:
    """The process environment without ROCm's variables, OpenMP's, any STRATA_* one or the
    terminal's width ($COLUMNS, $LINES: a test that wraps says its width), with strata's
    answer cache in ``cache_dir`` and no marketing names read from this machine's libdrm
    (a card is named as its plugin names it, whatever the machine has installed)."""
    from ..detect.visibility import is_runtime_variable

    clean = {
        k: v
        for k, v in os.environ.items()
        if not is_runtime_variable(k)
        and not k.startswith(("STRATA_", "OMP_"))
        and k not in ("COLUMNS", "LINES")
    }
    return clean | {"STRATA_CACHE_DIR": str(cache_dir), "STRATA_AMDGPU_IDS": ""}


@pytest.fixture
def strata_env(tmp_path: Path) -> dict[str, str]:
    """:func:`clean_environment` with the cache in the test's own folder and the HIP probe
    off."""
    return clean_environment(tmp_path / "strata-cache") | {"STRATA_HIP_PROBE": "0"}


@pytest.fixture
def fake_sysfs(tmp_path: Path) -> Callable[..., Path]:
    """``fake_sysfs([fake_gpu("gfx1032", vram_gib=8), "gfx1201"], cpu_nodes=1)``: a sysfs tree
    with those cards (a gfx target stands for ``fake_gpu(target)``), for ``--sysfs``."""
    trees = itertools.count()

    def write(cards: Sequence[FakeGPU | str], cpu_nodes: int = 1) -> Path:
        gpus = [
            fake_gpu(card, pci_bus=0x03 + n) if isinstance(card, str) else card
            for n, card in enumerate(cards)
        ]
        return write_sysfs(tmp_path / f"sysfs{next(trees)}", gpus, cpu_nodes)

    return write


@pytest.fixture
def plugin_manager(strata_env: dict[str, str]) -> Callable[..., PluginManager]:
    """``plugin_manager({"rx6600": plugin})``: a manager holding the core's ``core`` and
    ``host`` plugins and exactly those, with ``strata_env`` as its environment."""

    def holding(plugins: Mapping[str, object]) -> PluginManager:
        return PluginManager.holding(plugins, strata_env)

    return holding
