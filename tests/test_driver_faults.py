"""Each fault a driver, runtime or vendor library can have, planted in the stand-ins
(tests/fixtures/hip_stand_in.c, blas_stand_in.c) and met on each call set a machine may have
(conftest.CALL_SETS: the newest, a CUDA 11.8 driver's, only what a plain run needs): every
one is said as itself (the call, the library, the signal, the time limit), the same on each
call set, and a run that cannot go on on the card or the host ends with status 2."""

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import strata_core
from conftest import CALL_SETS
from test_stopping import GONE_WITHIN_S, session_processes

from strata_core.library_search import lacks
from strata_core.testing.sysfs import R9700, write_nvidia_gpu, write_sysfs

TINY = Path(__file__).parent / "fixtures" / "profiles" / "tiny.toml"
HOST_RUNS = "; the host backend runs the workload"

#: fault: (the environment that plants it (a limit of 3 s where it hangs), the line said with
#: {lib} the stand-in's path and {run} "the GPU run (RUNTIME NAME)", whether the run goes on
#: on the host)
CUDA_FAULTS = {
    "context crash": (
        {"STAND_IN_FAULT": "context-crash"},
        "{run} died of SIGSEGV in cuDevicePrimaryCtxRetain of {lib}" + HOST_RUNS,
        True,
    ),
    "refused launch": (
        {"STAND_IN_FAULT": "launch-refused"},
        "error: cuLaunchKernel(read_bytes) failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701) in "
        "{lib}",
        False,
    ),
    "hang in synchronize": (
        {"STAND_IN_FAULT": "sync-hang", "STRATA_RUN_TIMEOUT": "3"},
        "{run} gave no answer within 3 s (STRATA_RUN_TIMEOUT sets the limit), stuck in "
        "cuStreamSynchronize of {lib}" + HOST_RUNS,
        True,
    ),
    "wrong results": (
        {"STAND_IN_FAULT": "wrong-results"},
        "error: matvec_q8_0 gave a wrong result in decode step 1: it differs from the host "
        "backend's result; the strata_kernels-sm_90.ptx code object is not to be trusted here",
        False,
    ),
    "cuBLASLt crash": (
        {"STAND_IN_FAULT": "gemm-crash"},
        "{run} died of SIGSEGV in cublasLtMatmul of {lib}" + HOST_RUNS,
        True,
    ),
    "cuBLASLt hang": (
        {"STAND_IN_FAULT": "gemm-hang", "STRATA_RUN_TIMEOUT": "3"},
        "{run} gave no answer within 3 s (STRATA_RUN_TIMEOUT sets the limit), stuck in "
        "cublasLtMatmul of {lib}" + HOST_RUNS,
        True,
    ),
    "missing cuBLASLt": (
        {"STRATA_CUBLASLT_LIBRARY": "/nowhere/libcublasLt.so.13"},
        "the prompt GEMM cannot run on the card: no cuBLASLt found (tried "
        "/nowhere/libcublasLt.so.13)" + HOST_RUNS,
        True,
    ),
    "foreign cuBLASLt": (
        {"STRATA_CUBLASLT_LIBRARY": "{nvml}"},
        "the prompt GEMM cannot run on the card: {nvml} is not a cuBLASLt strata can use: it "
        "has no cublasLtCreate, cublasLtDestroy, cublasLtGetStatusName and 15 more" + HOST_RUNS,
        True,
    ),
    "warp of 64": (
        {"STAND_IN_WARP": "64"},
        "error: cuda is a wave32 build; NVIDIA H200 (sm_90) is wave64: refused",
        False,
    ),
    "no device": (
        {"STAND_IN_FAULT": "no-device"},
        "the CUDA driver {lib} reports no device" + HOST_RUNS,
        True,
    ),
}


def run_said(root: Path, carried: dict[str, str], line: str, host_runs: bool) -> None:
    """`run --json` on ``root`` says ``line`` and no traceback, and goes on on the host (exit
    status 0) or stops (2) as ``host_runs`` says."""
    result = strata_core("run", "--json", "--profile", str(TINY), "--sysfs", str(root),
                         env=carried, check=False)  # fmt: skip
    said = [said.removeprefix("strata-core: ") for said in result.stderr.splitlines()]
    assert line in said, result.stderr
    assert "Traceback" not in result.stderr and "ffi.error" not in result.stderr
    if host_runs:
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["backend"] == "host"
    else:
        assert result.returncode == 2


@pytest.mark.parametrize("calls", CALL_SETS)
@pytest.mark.parametrize("fault", CUDA_FAULTS)
def test_each_cuda_fault_is_said_as_itself_on_each_drivers_calls(
    tmp_path, env, emulating_stand_ins, nvml_stand_in, with_driver, calls, fault
):
    lib = emulating_stand_ins(calls)
    planted, line, host_runs = CUDA_FAULTS[fault]
    planted = {name: value.format(nvml=nvml_stand_in) for name, value in planted.items()}
    root = write_nvidia_gpu(tmp_path / "sys", "0000:41:00.0")
    run = "the GPU run (CUDA driver libamdhip64.so.7)"
    said = line.format(lib=lib, run=run, nvml=nvml_stand_in)
    run_said(root, with_driver(env, lib, **planted), said, host_runs)


#: the HIP runtime's faults, as CUDA_FAULTS (the card an R9700, whose prompt GEMM is rocBLAS's)
HIP_FAULTS = {
    "crash at the device": (
        {"STAND_IN_FAULT": "context-crash"},
        "{run} died of SIGSEGV in hipSetDevice of {lib}" + HOST_RUNS,
        True,
    ),
    "refused launch": (
        {"STAND_IN_FAULT": "launch-refused"},
        "error: hipModuleLaunchKernel(read_bytes) failed: hipErrorLaunchOutOfResources (701) in "
        "{lib}",
        False,
    ),
    "hang in synchronize": (
        {"STAND_IN_FAULT": "sync-hang", "STRATA_RUN_TIMEOUT": "3"},
        "{run} gave no answer within 3 s (STRATA_RUN_TIMEOUT sets the limit), stuck in "
        "hipStreamSynchronize of {lib}" + HOST_RUNS,
        True,
    ),
    "wrong results": (
        {"STAND_IN_FAULT": "wrong-results"},
        "error: matvec_q8_0 gave a wrong result in decode step 1: it differs from the host "
        "backend's result; the strata_kernels-gfx1201.hsaco code object is not to be trusted "
        "here",
        False,
    ),
    "rocBLAS crash": (
        {"STAND_IN_FAULT": "gemm-crash"},
        "{run} died of SIGSEGV in rocblas_gemm_ex of {lib}" + HOST_RUNS,
        True,
    ),
    "no device": (
        {"STAND_IN_FAULT": "no-device"},
        "the HIP runtime {lib} reports no device" + HOST_RUNS,
        True,
    ),
}


@pytest.mark.parametrize("calls", ["newest", "plain"])
@pytest.mark.parametrize("fault", HIP_FAULTS)
def test_each_hip_fault_is_said_as_itself_with_or_without_graph_calls(
    tmp_path, env, emulating_stand_ins, calls, fault
):
    lib = emulating_stand_ins(calls)
    planted, line, host_runs = HIP_FAULTS[fault]
    root = write_sysfs(tmp_path / "sys", [R9700])
    carried = env | planted | {
        "STRATA_HIP_LIBRARY": lib,
        "STRATA_HIPBLASLT_LIBRARY": lib,
        "STRATA_ROCBLAS_LIBRARY": lib,
    }  # fmt: skip
    run = "the GPU run (HIP runtime libamdhip64.so.7)"
    run_said(root, carried, line.format(lib=lib, run=run), host_runs)


@pytest.mark.parametrize(
    ("calls", "step"),
    [
        ("newest", "graph"),
        ("cuda-11.8", "handover"),
        ("plain", "graphs"),
    ],
)
def test_a_driver_without_the_optional_calls_runs_and_says_what_it_skipped(
    tmp_path, env, emulating_stand_ins, with_driver, calls, step
):
    """Graph replay and handover are used only where the driver has their calls: without
    them the run goes on, on the card, and says which call it lacked."""
    lib = emulating_stand_ins(calls)
    root = write_nvidia_gpu(tmp_path / "sys", "0000:41:00.0")
    result = strata_core("run", "--json", "--profile", str(TINY), "--sysfs", str(root),
                         env=with_driver(env, lib))  # fmt: skip
    answer = json.loads(result.stdout)
    assert answer["backend"] == "cuda"
    assert all(k["checked"] == k["calls"] > 0 for k in answer["kernels"].values())
    replay = answer["step"]
    if step == "graph":
        assert replay["graph_ms"] is not None and replay["handover_ms"] is not None
    elif step == "handover":
        assert replay["graph_ms"] is not None and replay["handover_ms"] is None
        assert replay["handover_missing"] == f"{lib} has no cuLaunchKernelEx"
    else:
        assert replay["graph_ms"] is None and replay["handover_ms"] is None
        assert replay["graph_missing"].startswith(f"{lib} has no cuStreamBeginCapture_v2, ")


def _guide_row(library: str) -> tuple[set[str], set[str]]:
    """The calls the guide's table says strata requires of ``library`` and uses where
    present."""
    guide = (Path(__file__).parent.parent / "docs" / "guide.md").read_text()
    row = next(line for line in guide.splitlines() if line.startswith(f"| {library} ("))
    _, _, required, present, _ = row.split("|")
    return set(re.findall(r"`(\w+)`", required)), set(re.findall(r"`(\w+)`", present))


@pytest.mark.parametrize("library", ["CUDA driver", "HIP runtime"])
def test_the_guide_names_each_call_as_the_binding_requires_it(library):
    if library == "CUDA driver":
        from strata_core.cuda._cuda_ffi import ffi
        from strata_core.cuda.driver import GRAPH_CALLS, HANDOVER_CALL

        optional = {*GRAPH_CALLS, HANDOVER_CALL}
    else:
        from strata_core.hip._hip_ffi import ffi
        from strata_core.hip.binding import GCN_ARCH_NAME_OFFSETS
        from strata_core.hip.runtime import GRAPH_CALLS

        optional = {*GRAPH_CALLS, *(symbol for symbol, _ in GCN_ARCH_NAME_OFFSETS)}
    process = ffi.dlopen(None)  # the binding's names, the calls unresolved
    constants = {name for name in dir(process) if not lacks(process, ffi, name)}
    calls = set(dir(process)) - constants
    assert _guide_row(library) == (calls - optional, optional)


def test_a_runtime_that_leaves_a_helper_process_neither_blocks_the_run_nor_outlives_it(
    tmp_path, env, emulating_stand_in
):
    """A runtime that starts a process of its own which never ends (and holds the pipes of
    the child that loaded it: the HIP probe's, the GPU run's) costs no time limit: each child
    ends as its work does, the run is checked on the card, and nothing it started is left."""
    root = write_sysfs(tmp_path / "sys", [R9700])
    planted = env | {
        "STRATA_HIP_LIBRARY": emulating_stand_in,
        "STRATA_ROCBLAS_LIBRARY": emulating_stand_in,
        "STAND_IN_FAULT": "helper-on-load",
        "STAND_IN_HANGING": str(tmp_path / "helper"),
        "STRATA_HIP_PROBE_TIMEOUT": "600",
        "STRATA_RUN_TIMEOUT": "600",
    }  # fmt: skip
    command = [sys.executable, "-m", "strata_core", "run", "--json", "--profile", str(TINY),
               "--sysfs", str(root)]  # fmt: skip
    parent = subprocess.Popen(
        command, env=planted, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, err = parent.communicate(timeout=GONE_WITHIN_S * 4)
        left = session_processes(parent.pid)
    finally:
        for pid in session_processes(parent.pid):
            os.kill(pid, signal.SIGKILL)
        parent.kill()
        parent.communicate()
    assert parent.returncode == 0, err
    assert json.loads(out)["backend"] == "hip"
    assert (tmp_path / "helper").exists()  # a helper was started indeed
    assert left == []
