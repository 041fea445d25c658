"""NVIDIA cards: seen on the PCI bus of a sysfs tree, described by the CUDA driver (here the
stand-in of tests/fixtures/hip_stand_in.c, which is also a libcuda), run by the cuda plugin;
the backend choice of the reference page ("Setup picks --backend hip by itself on a PC with no
NVIDIA card Strata can use. ... mixed AMD/NVIDIA runs are not supported")."""

import json
from functools import partial
from pathlib import Path

import pytest
from cli_runner import strata_core

from strata_core.hip import abi
from strata_core.testing.sysfs import R9700, write_nvidia_gpu, write_sysfs

TINY = Path(__file__).parent / "fixtures" / "profiles" / "tiny.toml"
PCI = "0000:41:00.0"

run = partial(strata_core, check=False)


@pytest.fixture
def nvidia_tree(tmp_path):
    """A sysfs tree with an R9700 (HIP 0) and an NVIDIA card on the PCI bus."""
    return write_nvidia_gpu(write_sysfs(tmp_path / "sys", [R9700]), PCI)


def with_driver(env, library, **more):
    """The environment of a PC whose CUDA driver is the stand-in, an H200 by default."""
    driver = {
        "STRATA_CUDA_PROBE": "1",
        "STRATA_CUDA_LIBRARY": library,
        "STRATA_CUBLASLT_LIBRARY": library,
        "STAND_IN_ARCH": "sm_90",
    }
    return env | driver | more


def devices_json(root, env) -> dict:
    result = run("devices", "--json", "--sysfs", str(root), env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_without_a_driver_the_card_is_known_by_pci_and_the_hip_backend_runs(nvidia_tree, env):
    answer = devices_json(nvidia_tree, env)
    amd, nvidia = answer["devices"]
    assert (nvidia["pci"], nvidia["gfx"], nvidia["plugin"]) == (PCI, "sm_unknown", None)
    assert "cuda needs the compute capability" in nvidia["reason"]
    assert amd["selected"] and not nvidia["selected"]


def test_the_driver_describes_the_card_and_the_cuda_backend_runs_it(nvidia_tree, env, stand_in):
    answer = devices_json(nvidia_tree, with_driver(env, stand_in))
    amd, nvidia = answer["devices"]
    assert (nvidia["name"], nvidia["gfx"], nvidia["index"]) == ("NVIDIA H200", "sm_90", 0)
    assert nvidia["family"] == "NVIDIA compute capability 9.0"
    assert nvidia["plugin"] == "cuda" and nvidia["selected"] and not amd["selected"]
    assert nvidia["seen_by"] == ["pci", "nvidia"]
    assert (
        "RX 9070 / RX 9070 XT / Radeon AI PRO R9700 (gfx1201) is not used: the CUDA backend "
        "runs, and mixed AMD/NVIDIA runs are not supported"
    ) in answer["notes"]
    plan = json.loads(
        run("plan", "--json", "--sysfs", str(nvidia_tree), env=with_driver(env, stand_in)).stdout
    )
    assert (plan["plugin"], plan["device"]["gfx"], plan["package"]) == ("cuda", "sm_90", None)
    # the hipBLASLt and rocBLAS tables are the HIP backend's; cuBLASLt's is taken when asked
    assert list(plan["tuning"]) == ["cublaslt"] and not plan["tuning"]["cublaslt"]["used"]
    assert plan["kernels"]["matvec_q8_0"]["variant"] == "dp4a"


def test_cuda_visible_devices_hides_the_card_as_the_driver_does(nvidia_tree, env, stand_in):
    answer = devices_json(nvidia_tree, with_driver(env, stand_in, CUDA_VISIBLE_DEVICES="-1"))
    amd, nvidia = answer["devices"]
    assert nvidia["reason"].startswith("hidden by not listed by the CUDA driver")
    # the ROCm runtime reads CUDA_VISIBLE_DEVICES as HIP_VISIBLE_DEVICES: the R9700 goes too
    assert amd["reason"].startswith("hidden by CUDA_VISIBLE_DEVICES")
    assert answer["selected"] == []


def test_a_newer_card_runs_the_newest_ptx_below_it(tmp_path, env, stand_in):
    root = write_nvidia_gpu(tmp_path / "sys", PCI)
    answer = devices_json(root, with_driver(env, stand_in, STAND_IN_ARCH="sm_120"))
    (card,) = answer["devices"]
    assert card["reason"] == "cuda runs its sm_90 PTX on sm_120 (the driver compiles it)"


def test_a_driver_that_crashes_is_one_line(nvidia_tree, env, stand_in):
    result = run(
        "devices", "--sysfs", str(nvidia_tree),
        env=with_driver(env, stand_in, STAND_IN_FAULT="segv-on-load"),
    )  # fmt: skip
    assert result.returncode == 0
    assert any(
        line.startswith("strata-core: warning: CUDA driver probe failed (exit status -11")
        and line.endswith("NVIDIA cards are known by PCI only")
        for line in result.stderr.splitlines()
    )


def test_run_on_an_nvidia_card_runs_every_kernel_through_the_driver(
    tmp_path, env, emulating_stand_in
):
    root = write_nvidia_gpu(tmp_path / "sys", PCI)
    launches = tmp_path / "launches"
    result = run(
        "run", "--json", "--profile", str(TINY), "--sysfs", str(root),
        env=with_driver(env, emulating_stand_in, STAND_IN_LAUNCHES=str(launches)),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert (answer["backend"], answer["plugin"], answer["target"]) == ("cuda", "cuda", "sm_90")
    assert answer["code_object"].endswith("strata_kernels-sm_90.ptx")
    kernels = answer["kernels"]
    assert all(k["checked"] == k["calls"] > 0 for k in kernels.values())
    # the stand-in's events say 0.25 ms for every launch, the read kernel's included
    assert answer["read_bandwidth_gbs"] == round(1048576 / 0.25e-3 / 1e9, 2)
    assert kernels["matvec_q8_0"]["bandwidth_of_read"] is not None
    assert {name: k["variant"] for name, k in kernels.items()} == {
        "matvec_q8_0": "dp4a", "router_topk": "fast", "router_topk_prompt": "fast",
        "topk": "radix", "topk_prompt": "radix", "prompt_gemm": "cublaslt",
    }  # fmt: skip
    assert answer["gemm_library"] == {
        "library": "cuBLASLt", "path": emulating_stand_in, "version": "120804"
    }  # fmt: skip
    launched = {line.split()[0] for line in launches.read_text().splitlines()}
    assert launched == {"strata_" + op for op in abi.OPERATIONS} - {"strata_prompt_gemm"}


def test_gpus_names_cuda_devices_when_the_cuda_backend_runs(nvidia_tree, env, stand_in):
    result = run(
        "plan", "--gpus", "0,1", "--sysfs", str(nvidia_tree), env=with_driver(env, stand_in)
    )
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "strata-core: --gpus from command line: no CUDA device 1 (visible CUDA devices: 0)"
    )


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("print-on-load", None),
        ("device-get-fails", "device 0: cuDeviceGet: error 101; skipped"),
        ("huge-memory", "device 0: 18446744073709551615 bytes of memory; expected up to 1 PiB"),
    ],
)
def test_a_driver_that_misbehaves_is_one_line_and_one_card(nvidia_tree, env, stand_in, fault, said):
    """A driver that prints on stdout still answers; a device it cannot open is said once and
    no card "at None"; a memory size past 1 PiB (the KFD reader's cap) is no size and never
    the most VRAM."""
    result = run("devices", "--json", "--sysfs", str(nvidia_tree),
                 env=with_driver(env, stand_in, STAND_IN_FAULT=fault))  # fmt: skip
    answer = json.loads(result.stdout)
    nvidia = [d for d in answer["devices"] if d["pci"] == PCI]
    assert len(nvidia) == 1 and "None" not in nvidia[0]["name"]
    problems = [w for w in answer["warnings"] if "CUDA driver" in w]
    if said is None:
        assert not problems and nvidia[0]["gfx"] == "sm_90"
    else:
        assert len(problems) == 1 and problems[0].endswith(said), problems
    if fault == "huge-memory":
        assert nvidia[0]["vram_bytes"] is None
