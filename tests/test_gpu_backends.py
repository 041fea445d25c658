"""The GPU backend registry (strata_core.gpu.backends): each vendor's backend, its runtime and
code reader chosen from one table, and only the chosen backend's modules imported."""

import subprocess
import sys
from pathlib import Path

import pytest

from strata_core.gpu import backends

#: opens the cuda plugin's code object on the CUDA driver's card 0 as a run's child does, then
#: prints the strata_core.hip modules that were imported on the way
CUDA_OPEN = """
import os, sys
from strata_core.api.manager import PluginManager
from strata_core.gpu.backends import runtime_candidates
from strata_core.run.gpu_backend import GpuCard, open_gpu
library = PluginManager.discover(os.environ).kernel_libraries(["cuda"])["cuda"]
card = GpuCard("cuda", "cuda", library, 0, tuple(runtime_candidates("cuda", os.environ)))
print(open_gpu(card).card.gfx)
print(" ".join(m for m in sys.modules if m.startswith("strata_core.hip")))
"""


def test_each_vendor_has_one_backend_and_the_cpu_none():
    assert backends.backend_for("amd") == "hip"
    assert backends.backend_for("nvidia") == "cuda"
    assert backends.backend_for("cpu") is None


def test_the_candidates_come_from_each_backends_variable():
    env = {"STRATA_HIP_LIBRARY": "/x/libamdhip64.so", "STRATA_CUDA_LIBRARY": "/y/libcuda.so"}
    assert backends.runtime_candidates("hip", env)[0] == "/x/libamdhip64.so"
    assert backends.runtime_candidates("cuda", env)[0] == "/y/libcuda.so"
    assert backends.runtime_candidates("host", env) == []


@pytest.mark.parametrize(("name", "reader"), [("k.ptx", "ptx"), ("k.hsaco", "code_object")])
def test_a_code_object_is_read_by_its_suffixs_reader(monkeypatch, name, reader):
    read = []
    monkeypatch.setattr(f"strata_core.gpu.{reader}.read", read.append)
    backends.read_code(Path(name))
    assert read == [Path(name)]


def test_a_cuda_launch_imports_no_hip_module(env, stand_in, with_driver):
    result = subprocess.run(
        [sys.executable, "-c", CUDA_OPEN],
        env=with_driver(env, stand_in),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["sm_90", ""]
