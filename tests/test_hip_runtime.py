"""The HIP runtime binding and the GPU backend's start: Debian's libamdhip64-5 (loads, no
device), and a stand-in runtime (tests/fixtures/hip_stand_in.c) that reports one card of a
chosen architecture and records launches without computing anything."""

import argparse
import json
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cli_runner import strata_core
from test_hip_probe import needs_debian_hip

from strata_core import profile
from strata_core.errors import StrataError
from strata_core.hip import abi
from strata_core.hip.backend import OpenedGpu
from strata_core.hip.library import Card, GpuKernels, card, start_check
from strata_core.hip.runtime import HipError, HipRuntime
from strata_core.host import reference
from strata_core.host.library import HostLibrary
from strata_core.manager import PluginManager
from strata_core.records import KernelLibrary
from strata_core.run_command import run_on_gpu
from strata_core.testing import plan_for
from strata_core.testing.sysfs import R9700, write_sysfs

STAND_IN = Path(__file__).parent / "fixtures" / "hip_stand_in.c"
TINY = Path(__file__).parent / "fixtures" / "profiles" / "tiny.toml"


def _library(plugin: str) -> KernelLibrary:
    manager = PluginManager.discover({})
    return dict(manager.call_each("strata_kernel_library", expected=KernelLibrary))[plugin]


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory) -> str:
    library = tmp_path_factory.mktemp("hip") / "libamdhip64.so.7"
    subprocess.run(
        [shutil.which("cc") or "gcc", "-shared", "-fPIC", "-o", str(library), str(STAND_IN)],
        check=True,
    )
    return str(library)


@needs_debian_hip
def test_debian_runtime_loads_and_reports_no_device():
    runtime = HipRuntime({})
    assert runtime.path == "libamdhip64.so.5"
    assert runtime.device_count() == 0
    with pytest.raises(HipError, match=r"^hipSetDevice\(0\) failed: hipError\w+ \(\d+\) in "):
        runtime.set_device(0)


def test_no_runtime_is_one_line(tmp_path):
    missing = str(tmp_path / "libamdhip64.so.7")
    with pytest.raises(StrataError, match=f"^no HIP runtime found \\(tried {missing}\\)$"):
        HipRuntime({"STRATA_HIP_LIBRARY": missing})


def test_a_card_the_build_does_not_cover_stops_with_its_name_arch_and_the_build_list():
    gpu = Card(0, "AMD Radeon RX 7900 XTX", "gfx1100", 32)
    with pytest.raises(StrataError) as stopped:
        start_check("hip_rdna4", _library("hip_rdna4"), gpu)
    assert str(stopped.value) == (
        "AMD Radeon RX 7900 XTX is gfx1100; this build of hip_rdna4 was compiled for "
        "gfx1200, gfx1201"
    )


@pytest.mark.parametrize(
    ("plugin", "gpu", "why"),
    [
        ("gfx906", Card(0, "Radeon VII", "gfx906", 32), "gfx906 is a wave64 build; Radeon VII "
         "(gfx906) is wave32: refused"),
        ("hip_rdna4", Card(0, "R9700", "gfx1201", 64), "hip_rdna4 is a wave32 build; R9700 "
         "(gfx1201) is wave64: refused"),
    ],
)  # fmt: skip
def test_a_build_refuses_the_other_wave_size(plugin, gpu, why):
    with pytest.raises(StrataError) as refused:
        start_check(plugin, _library(plugin), gpu)
    assert str(refused.value) == why


def test_a_covered_card_gets_its_own_code_object():
    code = start_check("igpu", _library("igpu"), Card(0, "Radeon 780M", "gfx1103", 32))
    assert code.path.name == "strata_kernels-gfx1103.hsaco" and code.target == "gfx1103"


def test_the_launcher_packs_what_the_metadata_says(stand_in, tmp_path, monkeypatch):
    launches = tmp_path / "launches"
    monkeypatch.setenv("STAND_IN_LAUNCHES", str(launches))
    runtime = HipRuntime({"STRATA_HIP_LIBRARY": stand_in})
    gpu = card(runtime, 0)
    assert gpu == Card(0, "AMD Radeon AI PRO R9700", "gfx1201", 32)
    kernels = GpuKernels(runtime, start_check("hip_rdna4", _library("hip_rdna4"), gpu), gpu)
    kernels.topk(np.arange(5000, dtype=np.float32), 64, "wide")
    kernels.router_topk(np.zeros((20, 128), dtype=np.float32), 8, "fast")
    kernels.prompt_gemm(np.zeros((40, 64), np.float16), np.zeros((48, 64), np.float16))
    assert kernels.seconds == 0.25e-3  # the stand-in's 0.25 ms
    topk, router, gemm = (line.split() for line in launches.read_text().splitlines())
    scores, n, k, ids, values, variant = struct.unpack("<Qqi4xQQi", bytes.fromhex(topk[3]))
    assert topk[:3] == ["strata_topk", "1", "256"]
    assert (
        (n, k, variant) == (5000, 64, 2)
        and len({scores, ids, values}) == 3
        and 0 not in {scores, ids, values}
    )
    assert router[:3] == ["strata_router_topk", "3", "256"]  # 20 tokens, 8 logical warps a block
    fields = abi.layout("router_topk")
    raw = bytes.fromhex(router[3])
    assert [int.from_bytes(raw[a.offset : a.offset + a.size], "little") for a in fields][1:4] == [
        20,
        128,
        8,
    ]
    assert gemm[:3] == ["strata_prompt_gemm", "2", "256"]  # 3 x 3 WMMA tiles, 8 per block
    kernels.close()


def test_run_stops_when_the_runtime_sees_another_card(stand_in, env, tmp_path):
    root = write_sysfs(tmp_path, [R9700])
    carried = env | {
        "STRATA_HIP_LIBRARY": stand_in,
        "STAND_IN_NAME": "AMD Radeon RX 7900 XTX",
        "STAND_IN_ARCH": "gfx1100",
    }
    result = strata_core(
        "run", "--no-hip", "--profile", str(TINY), "--sysfs", str(root), env=carried, check=False
    )
    assert result.returncode != 0
    assert result.stderr.splitlines()[-1] == (
        "strata-core: AMD Radeon RX 7900 XTX is gfx1100; this build of hip_rdna4 was compiled "
        "for gfx1200, gfx1201"
    )


def test_run_checks_gpu_results_against_the_host(stand_in, env, tmp_path):
    """The stand-in computes nothing, so the first checked result must be refused."""
    root = write_sysfs(tmp_path, [R9700])
    result = strata_core(
        "run", "--json", "--profile", str(TINY), "--sysfs", str(root),
        env=env | {"STRATA_HIP_LIBRARY": stand_in}, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert result.stderr.splitlines()[-1] == (
        "strata-core: matvec_q8_0 gave a wrong result in decode step 1: it differs from the "
        "host backend's result; the strata_kernels-gfx1201.hsaco code object is not to be "
        "trusted here"
    )
    assert not result.stdout or "backend" not in json.loads(result.stdout)


class NumpyKernels:
    """A test double of GpuKernels that answers with the numpy references: it exercises the
    GPU run's checking and reporting, not any GPU code."""

    def __init__(self, code):
        self.code, self.seconds, self.closed = code, 0.0, False

    def _timed(self, result):
        self.seconds = 1e-4
        return result

    def matvec_q8_0(self, qs, d, xq, xd):
        return self._timed(reference.matvec_q8_0(qs, d, xq, xd).astype(np.float32))

    def router_topk(self, logits, k, variant="fast"):
        return self._timed(reference.router_topk(logits, k))

    def topk(self, scores, k, variant="auto"):
        return self._timed(reference.topk(scores, k))

    def prompt_gemm(self, a, wt):
        return self._timed(a.astype(np.float32) @ wt.astype(np.float32).T)

    def close(self):
        self.closed = True


@pytest.mark.parametrize("as_json", [True, False])
def test_the_gpu_run_reports_every_kernel(as_json, capsys):
    gpu_card = Card(0, "AMD Radeon AI PRO R9700", "gfx1201", 32)
    code = start_check("hip_rdna4", _library("hip_rdna4"), gpu_card)
    opened = OpenedGpu(NumpyKernels(code), gpu_card, "libamdhip64.so.7")
    plan = plan_for("gfx1201")
    args = argparse.Namespace(json=as_json)
    assert run_on_gpu(args, plan, profile.load(TINY), opened, HostLibrary()) == 0
    assert opened.kernels.closed
    out = capsys.readouterr().out
    if as_json:
        answer = json.loads(out)
        assert (answer["backend"], answer["target"], answer["card"]) == (
            "hip", "gfx1201", "AMD Radeon AI PRO R9700"
        )  # fmt: skip
        kernels = answer["kernels"]
        assert kernels["topk"]["variant"] == "radix"
        assert kernels["matvec_q8_0"]["variant"] == "v_dot4_i32_iu8"
        assert kernels["prompt_gemm"]["variant"] == "wmma"
        assert all(k["checked"] == k["calls"] > 0 for k in kernels.values())
        assert kernels["matvec_q8_0"]["median_ms"] == 0.1
    else:
        lines = out.splitlines()
        assert lines[0] == (
            "GPU backend: hip_rdna4 strata_kernels-gfx1201.hsaco on AMD Radeon AI PRO R9700 "
            "(gfx1201), HIP runtime libamdhip64.so.7; workload tiny; every result checked "
            "against the host backend"
        )
        assert {line.split()[0] for line in lines[1:]} == {
            "matvec_q8_0", "router_topk", "router_topk_prompt", "topk", "prompt_gemm"
        }  # fmt: skip
