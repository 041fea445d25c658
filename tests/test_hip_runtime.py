"""The HIP runtime binding and the GPU run: Debian's libamdhip64-5 (loads, no device), and a
stand-in runtime (tests/fixtures/hip_stand_in.c) that reports one card of a chosen
architecture and records launches, built once computing nothing and once computing with the
HIP source run on the CPU (tests/fixtures/hip_emulation.cpp), and made to crash or hang."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import expert_cases
import numpy as np
import pytest
from cli_runner import strata_core
from test_hip_probe import needs_debian_hip

from strata_core.api.manager import PluginManager
from strata_core.api.records import KernelChoice, KernelLibrary, Workload
from strata_core.errors import StrataError
from strata_core.gpu import abi
from strata_core.gpu.library import VARIANTS, GpuKernels, start_check
from strata_core.gpu.runtime import Card
from strata_core.hip.runtime import HipError, HipRuntime
from strata_core.host import reference
from strata_core.host.library import HostLibrary
from strata_core.library_search import lacking_calls, lacks
from strata_core.plan import profile
from strata_core.plan.plan import RunSettings
from strata_core.run import workload
from strata_core.run.child_process import _run_child, last_words
from strata_core.run.gpu_backend import KernelGemm
from strata_core.run.runner import HostReference
from strata_core.testing.sysfs import MI50, R9700, RX_7900_XTX, fake_gpu, write_sysfs
from strata_core.tuning.dispatch import TunedDispatch

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
STAND_IN = FIXTURES / "hip_stand_in.c"
TINY = FIXTURES / "profiles" / "tiny.toml"


def _library(plugin: str) -> KernelLibrary:
    manager = PluginManager.discover({})
    return manager.kernel_libraries()[plugin]


@needs_debian_hip
def test_debian_runtime_loads_and_reports_no_device():
    runtime = HipRuntime(["libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"])
    assert runtime.path == "libamdhip64.so.5"
    assert runtime.device_count() == 0
    with pytest.raises(HipError, match=r"^hipSetDevice\(0\) failed: hipError\w+ \(\d+\) in "):
        runtime.set_device(0)


def test_no_runtime_is_one_line(tmp_path):
    missing = str(tmp_path / "libamdhip64.so.7")
    with pytest.raises(StrataError, match=f"^no HIP runtime found \\(tried {missing}\\)$"):
        HipRuntime([missing])


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
    runtime = HipRuntime([stand_in])
    gpu = runtime.card(0)
    assert gpu == Card(0, "AMD Radeon AI PRO R9700", "gfx1201", 32)
    kernels = GpuKernels(runtime, start_check("hip_rdna4", _library("hip_rdna4"), gpu), gpu)
    kernels.topk(np.arange(30000, dtype=np.float32).reshape(3, 10000), 64, "wide")
    kernels.router_topk(np.zeros((20, 128), dtype=np.float32), 8, "fast")
    kernels.prompt_gemm(np.zeros((40, 64), np.float16), np.zeros((48, 64), np.float16))
    assert kernels.seconds == 0.25e-3  # the stand-in's 0.25 ms
    *topk, router, gemm = (line.split() for line in launches.read_text().splitlines())
    # the wide kernel's two stages over the 3 rows: 3, then 3 x 3 pieces of 4096 cells
    assert [line[:3] for line in topk] == [["strata_topk", grid, "256"] for grid in "39"]
    for stage, line in enumerate(topk):
        raw = bytes.fromhex(line[3])
        fields = [int.from_bytes(raw[a.offset : a.offset + a.size], "little")
                  for a in abi.layout("topk")]  # fmt: skip
        scores, queries, n, stride, k, ids, values, variant, scratch, at = fields
        assert (queries, n, stride, k, variant, at) == (3, 10000, 10000, 64, 2, stage)
        assert len({scores, ids, values, scratch}) == 4 and 0 not in {scores, ids, values}
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


@pytest.mark.parametrize(
    ("ids", "kernel"),
    [([[5, 1, 3]], "strata_expert_pairs_q8_0"), ([[5, 1, 3], [2, 0, 4]], "strata_expert_pairs_q8_0"),
     ([[5, 1, 3], [1, 0, 4]], "strata_expert_matvec_q8_0")],
)  # fmt: skip
def test_the_expert_step_runs_as_one_matvec_where_no_expert_is_named_twice(
    emulating_stand_in, tmp_path, monkeypatch, ids, kernel
):
    """Pairs that each name their own expert run as one matvec over their rows; an expert two
    pairs share runs the grouped step, which reads it once for both. Both as the host computes."""
    launches = tmp_path / "launches"
    monkeypatch.setenv("STAND_IN_LAUNCHES", str(launches))
    runtime = HipRuntime([emulating_stand_in])
    gpu = runtime.card(0)
    kernels = GpuKernels(runtime, start_check("hip_rdna4", _library("hip_rdna4"), gpu), gpu)
    qs, d, _, xq, xd = expert_cases.make(6, len(ids), 3, 37, 64, "router")
    chosen = np.array(ids, dtype=np.int32)
    y = kernels.expert_matvec_q8_0(qs, d, chosen, xq, xd)
    kernels.close()
    assert [line.split()[0] for line in launches.read_text().splitlines()] == [kernel]
    want = reference.expert_matvec_q8_0(qs, d, chosen, xq, xd)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_a_run_uploads_its_weights_once_and_each_call_its_activations(
    emulating_stand_in, monkeypatch
):
    """The workload keeps every weight array on the card before its first call: each goes up
    once however many calls read it, and the results are still the host backend's."""
    runtime = HipRuntime([emulating_stand_in])
    gpu = runtime.card(0)
    kernels = GpuKernels(runtime, start_check("hip_rdna4", _library("hip_rdna4"), gpu), gpu)
    uploaded = []
    upload = runtime.upload

    def recorded_upload(pointer, array, stream):
        uploaded.append(array)
        upload(pointer, array, stream)

    monkeypatch.setattr(runtime, "upload", recorded_upload)
    inputs = workload.make_inputs(profile.load(TINY))
    gemm = KernelGemm(kernels, inputs.w)
    choices = {
        op: KernelChoice(op, variant, "test")
        for op, variant in (("matvec_q8_0", "v_dot4_i32_iu8"), ("router_topk", "fast"),
                            ("topk", "register"), ("topk_prompt", "wide"),
                            ("prompt_gemm", "wmma"))
    }  # fmt: skip
    results = workload.execute(
        kernels, gemm, workload.wall_clock, inputs, choices, TunedDispatch(None, "strata GEMM")
    )
    kernels.close()
    for weights in (*inputs.dense[0], inputs.expert_qs, inputs.expert_d, gemm.wt):
        assert sum(np.shares_memory(array, weights) for array in uploaded) == 1
    matvec_calls = sum(call.op == "matvec_q8_0" for call in inputs.calls)
    assert matvec_calls > 1 and sum(call.op == "expert_matvec_q8_0" for call in inputs.calls) > 1
    reports = workload.check(
        inputs, results, choices, HostReference(HostLibrary(), choices), gemm, "the host", "it"
    )
    assert reports["matvec_q8_0"].checked == matvec_calls


def test_an_array_kept_as_another_dtype_is_refused_in_one_line(stand_in):
    runtime = HipRuntime([stand_in])
    gpu = runtime.card(0)
    kernels = GpuKernels(runtime, start_check("hip_rdna4", _library("hip_rdna4"), gpu), gpu)
    qs = kernels.keep(np.zeros((4, 64), np.int16))
    with pytest.raises(StrataError) as refused:
        kernels.matvec_q8_0(qs, np.zeros((4, 2), np.float16), np.zeros(64, np.int8),
                            np.zeros(2, np.float32))  # fmt: skip
    kernels.close()
    assert str(refused.value) == "matvec_q8_0: qs is kept on the card as int16; it takes int8"


def test_timing_repeats_on_inputs_uploaded_once_behind_a_hold(stand_in, tmp_path, monkeypatch):
    """With repeats and a hold, each timed launch follows the read kernel over the hold
    buffer, which is allocated once."""
    launches = tmp_path / "launches"
    monkeypatch.setenv("STAND_IN_LAUNCHES", str(launches))
    runtime = HipRuntime([stand_in])
    gpu = runtime.card(0)
    code = start_check("hip_rdna4", _library("hip_rdna4"), gpu)
    kernels = GpuKernels(runtime, code, gpu, repeats=3, hold_bytes=1 << 20)
    kernels.router_topk(np.zeros((20, 128), dtype=np.float32), 8, "fast")
    names = [line.split()[0] for line in launches.read_text().splitlines()]
    assert names == ["strata_read_bytes", "strata_router_topk"] * 3
    holds = {line.split()[3] for line in launches.read_text().splitlines()[::2]}
    assert len(holds) == 1  # the same hold buffer every time
    assert kernels.seconds == 0.25e-3
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
        "strata-core: error: AMD Radeon RX 7900 XTX is gfx1100; this build of hip_rdna4 was "
        "compiled for gfx1200, gfx1201"
    )


def test_run_checks_gpu_results_against_the_host(stand_in, env, tmp_path):
    """The stand-in computes nothing, so the first checked result must be refused."""
    root = write_sysfs(tmp_path, [R9700])
    result = strata_core(
        "run", "--json", "--profile", str(TINY), "--sysfs", str(root),
        env=env | {"STRATA_HIP_LIBRARY": stand_in, "STRATA_ROCBLAS_LIBRARY": stand_in},
        check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert result.stderr.splitlines()[-1] == (
        "strata-core: error: matvec_q8_0 gave a wrong result in decode step 1: it differs from "
        "the host backend's result; the strata_kernels-gfx1201.hsaco code object is not to be "
        "trusted here"
    )
    assert not result.stdout or "backend" not in json.loads(result.stdout)


def test_a_variant_the_kernel_library_lacks_is_one_line(stand_in):
    runtime = HipRuntime([stand_in])
    gpu = runtime.card(0)
    kernels = GpuKernels(runtime, start_check("hip_rdna4", _library("hip_rdna4"), gpu), gpu)
    with pytest.raises(StrataError, match=r"^the GPU kernel library has no topk variant 'auto' "):
        kernels.topk(np.arange(100, dtype=np.float32), 4, "auto")
    kernels.close()


#: (card, the stand-in's architecture and warp size, what the plan chooses on it, the vendor
#: library its prompt GEMM runs through (plain hipBLAS is rocBLAS underneath) and that
#: library's version in the stand-in)
CARDS = {
    "gfx1201": (R9700, "gfx1201", "32", {"matvec_q8_0": "v_dot4_i32_iu8",
                                          "prompt_gemm": "hipblas"}, ("rocBLAS", "5.6.0.8d1ae90e")),
    "gfx1030": (fake_gpu("gfx1030"), "gfx1030", "32", {"matvec_q8_0": "v_dot4_i32_i8",
                                                        "prompt_gemm": "rocblas"},
                ("rocBLAS", "5.6.0.8d1ae90e")),
    "gfx906": (MI50, "gfx906", "64", {"matvec_q8_0": "v_dot4_i32_i8",
                                      "prompt_gemm": "hipblas"}, ("rocBLAS", "5.6.0.8d1ae90e")),
}  # fmt: skip
ROUTERS = {"fast": {}, "portable": {"STRATA_HIP_ROUTER_OLD": "1"}}


def _stand_in_run(tmp_path, env, library, gpu, arch, warp, **more):
    """`strata-core run --json` on a card the emulating stand-in plays, with the vendor
    libraries' stand-ins; the answer and the launched kernels' lines."""
    root = write_sysfs(tmp_path / "sys", [gpu])
    launches = tmp_path / "launches"
    carried = env | more | {
        "STRATA_HIP_LIBRARY": library,
        "STRATA_HIPBLASLT_LIBRARY": library,
        "STRATA_ROCBLAS_LIBRARY": library,
        "STAND_IN_ARCH": arch,
        "STAND_IN_WARP": warp,
        "STAND_IN_LAUNCHES": str(launches),
    }  # fmt: skip
    result = strata_core("run", "--json", "--profile", str(TINY), "--sysfs", str(root), env=carried)
    launched = [line.split() for line in launches.read_text().splitlines()]
    return json.loads(result.stdout), launched


@pytest.mark.parametrize("router", ROUTERS)
@pytest.mark.parametrize("target", CARDS)
def test_run_on_a_card_runs_every_operation_and_variant_the_plan_chooses(
    emulating_stand_in, env, tmp_path, target, router
):
    gpu, arch, warp, chosen, (library, version) = CARDS[target]
    answer, launched = _stand_in_run(
        tmp_path, env, emulating_stand_in, gpu, arch, warp, **ROUTERS[router]
    )
    assert (answer["backend"], answer["target"]) == ("hip", arch)
    kernels = answer["kernels"]
    assert set(kernels) == {
        "matvec_q8_0", "router_topk", "router_topk_prompt", "topk", "topk_prompt", "prompt_gemm",
        "expert_matvec_q8_0", "expert_matvec_q8_0_batch", "router_topk_batch",
    }  # fmt: skip
    assert all(k["checked"] == k["calls"] > 0 for k in kernels.values())
    want = chosen | {"router_topk": router, "router_topk_prompt": router, "topk": "register",
                     "topk_prompt": "register", "router_topk_batch": router,
                     "expert_matvec_q8_0": chosen["matvec_q8_0"],
                     "expert_matvec_q8_0_batch": chosen["matvec_q8_0"]}  # fmt: skip
    assert {name: k["variant"] for name, k in kernels.items()} == want
    assert answer["gemm_library"] == {
        "library": library, "path": emulating_stand_in, "version": version
    }  # fmt: skip
    assert {line[0] for line in launched} == {
        "strata_" + op for op in abi.OPERATIONS if op != "prompt_gemm"
    }
    names = [name for name, _ in abi.OPERATIONS["router_topk"]]
    variant_field = abi.layout("router_topk")[names.index("variant")]
    codes = {
        int.from_bytes(
            bytes.fromhex(line[3])[variant_field.offset : variant_field.offset + 4], "little"
        )
        for line in launched
        if line[0] == "strata_router_topk"
    }
    assert codes == {VARIANTS["router_topk"][router]}


def test_strata_pf_gemm_runs_the_kernel_librarys_wmma_gemm_on_gfx11(
    emulating_stand_in, env, tmp_path
):
    answer, launched = _stand_in_run(
        tmp_path, env, emulating_stand_in, RX_7900_XTX, "gfx1100", "32", STRATA_PF_GEMM="1"
    )
    assert answer["kernels"]["prompt_gemm"]["variant"] == "wmma"
    assert answer["kernels"]["prompt_gemm"]["checked"] > 0
    assert answer["gemm_library"] is None
    assert "strata_prompt_gemm" in {line[0] for line in launched}


@pytest.mark.parametrize(
    ("fault", "line"),
    [
        ("segv-on-load", "died of SIGSEGV; the host backend runs the workload"),
        # a runtime that ends the process (exit status 0) leaves no answer: the line says so,
        # with no Python warning of the child's as the runtime's reason
        ("exit-on-load",
         "ended without an answer (exit status 0: no message); the host backend runs the "
         "workload"),
    ],
)  # fmt: skip
def test_a_runtime_that_crashes_or_exits_on_load_is_one_line_and_the_host_runs(
    stand_in, env, tmp_path, fault, line
):
    root = write_sysfs(tmp_path, [R9700])
    carried = env | {"STRATA_HIP_LIBRARY": stand_in, "STAND_IN_FAULT": fault}
    result = strata_core("run", "--json", "--profile", str(TINY), "--sysfs", str(root), env=carried)
    assert (
        f"strata-core: the GPU run (HIP runtime libamdhip64.so.7) {line}"
    ) in result.stderr.splitlines()
    assert "Warning" not in result.stderr
    assert json.loads(result.stdout)["backend"] == "host"


def test_the_childs_own_python_warnings_are_not_the_runtimes_reason():
    said = (
        "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n"
        "/x/numpy/core/getlimits.py:89: UserWarning: The value of the smallest subnormal\n"
        "  return self._float_to_str(self.smallest_subnormal)\n"
        "<frozen runpy>:128: RuntimeWarning: 'strata_core.run.gpu_child' found in sys.modules\n"
    )
    assert last_words(said) == (
        "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"
    )
    assert last_words("<frozen runpy>:128: RuntimeWarning: found\n\n") == "no message"


def test_a_runtime_that_hangs_is_stopped_at_the_time_limit_and_the_host_runs(
    stand_in, env, tmp_path
):
    root = write_sysfs(tmp_path, [R9700])
    carried = env | {
        "STRATA_HIP_LIBRARY": stand_in,
        "STAND_IN_FAULT": "hang-count",
        "STRATA_RUN_TIMEOUT": "3",
    }
    result = strata_core("run", "--json", "--profile", str(TINY), "--sysfs", str(root), env=carried)
    assert (
        "strata-core: the GPU run (HIP runtime libamdhip64.so.7) gave no answer within 3 s "
        f"(STRATA_RUN_TIMEOUT sets the limit), stuck in hipGetDeviceCount of {stand_in}; the "
        "host backend runs the workload"
    ) in result.stderr.splitlines()
    assert json.loads(result.stdout)["backend"] == "host"


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_a_bad_run_timeout_is_one_line(env, tmp_path, value):
    result = strata_core(
        "run", "--sysfs", str(tmp_path), env=env | {"STRATA_RUN_TIMEOUT": value}, check=False
    )
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        f"strata-core: error: STRATA_RUN_TIMEOUT={value}: expected a positive number of seconds"
    )


def test_a_runtime_that_hangs_at_its_first_call_gets_the_probes_limit(stand_in, env, tmp_path):
    """The first contact with a runtime takes the probe's limit, not the whole run's."""
    root = write_sysfs(tmp_path, [R9700])
    carried = env | {
        "STRATA_HIP_LIBRARY": stand_in,
        "STAND_IN_FAULT": "hang-count",
        "STRATA_HIP_PROBE_TIMEOUT": "2",
        "STRATA_RUN_TIMEOUT": "600",
    }
    result = strata_core("run", "--json", "--profile", str(TINY), "--sysfs", str(root), env=carried)
    assert (
        "strata-core: the GPU run (HIP runtime libamdhip64.so.7) gave no answer within 2 s of "
        "its first call to the runtime (STRATA_HIP_PROBE_TIMEOUT sets the limit), stuck in "
        f"hipGetDeviceCount of {stand_in}; the host backend runs the workload"
    ) in result.stderr.splitlines()
    assert json.loads(result.stdout)["backend"] == "host"


def _gpu_children(marker: str) -> list[int]:
    """The processes whose command line names ``marker`` (the run's temporary folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"strata_core.run.gpu_child" in command and marker.encode() in command:
            found.append(int(entry.name))
    return found


def _interruptible() -> None:
    """Ctrl-C as at a terminal, also where the test runner was started with SIGINT ignored
    (a shell's background job), which a child would otherwise inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_ctrl_c_while_the_gpu_child_starts_still_ends_the_child(monkeypatch, tmp_path):
    started: list[subprocess.Popen] = []
    start = subprocess.Popen

    def start_then_ctrl_c(command, **options):
        started.append(start([sys.executable, "-c", "import time; time.sleep(60)"], **options))
        os.kill(os.getpid(), signal.SIGINT)
        return started[-1]

    settings = RunSettings(Workload(), 60.0, None, (), dict(os.environ))
    monkeypatch.setattr(subprocess, "Popen", start_then_ctrl_c)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            _run_child("unused", None, settings, tmp_path, None)
        running = [child.pid for child in started if child.poll() is None]
    finally:
        signal.signal(signal.SIGINT, previous)
        for child in started:
            child.kill()
            child.wait()
    assert len(started) == 1
    assert not running


@pytest.mark.parametrize(("signal_name", "status"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_stopped_run_ends_its_gpu_child_and_leaves_no_folder(
    stand_in, env, tmp_path, signal_name, status
):
    root = write_sysfs(tmp_path / "sys", [R9700])
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    carried = env | {
        "STRATA_HIP_LIBRARY": stand_in,
        "STAND_IN_FAULT": "hang-count",
        "STRATA_HIP_PROBE_TIMEOUT": "600",
        "STRATA_RUN_TIMEOUT": "600",
        "TMPDIR": str(scratch),
    }
    parent = subprocess.Popen(
        [sys.executable, "-m", "strata_core", "run", "--profile", str(TINY), "--sysfs", str(root)],
        env=carried, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=_interruptible,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not _gpu_children(str(scratch)) and time.monotonic() < deadline:
            assert parent.poll() is None
            time.sleep(0.05)
        assert _gpu_children(str(scratch))
        parent.send_signal(getattr(signal, signal_name))
        assert parent.wait(timeout=60) == status
        left = _gpu_children(str(scratch))
    finally:
        for pid in _gpu_children(str(scratch)):
            os.kill(pid, signal.SIGKILL)
        parent.kill()
        _, said = parent.communicate()
    assert "Traceback" not in said
    assert not left
    assert not list(scratch.iterdir())


def test_a_library_without_the_optional_calls_names_them_instead_of_raising():
    """cffi says a symbol a library lacks with its own ffi.error, not AttributeError: a driver
    without the graph calls or cuLaunchKernelEx (CUDA 11.8's) is one line naming them."""
    from strata_core.cuda._cuda_ffi import ffi
    from strata_core.hip._hip_ffi import ffi as hip_ffi
    from strata_core.library_search import missing_calls

    libc = ffi.dlopen("libc.so.6")
    calls = ("cuLaunchKernelEx", "cuStreamBeginCapture_v2")
    assert missing_calls(libc, ffi, calls, "libc.so.6") == (
        "libc.so.6 has no cuLaunchKernelEx, cuStreamBeginCapture_v2"
    )
    hip = hip_ffi.dlopen("libamdhip64.so.5")  # Debian's HIP runtime has these
    assert missing_calls(hip, hip_ffi, ("hipGetDeviceCount",), "libamdhip64.so.5") is None
    # libc has none of the driver's calls: the first three are named, and how many more
    assert lacking_calls(libc, ffi) == (
        "no cuCtxSetCurrent, cuDeviceGet, cuDeviceGetAttribute and 29 more"
    )


@needs_debian_hip
def test_a_rocm5_runtime_without_the_r0600_properties_call_is_asked_without_raising():
    """ROCm 5's runtime has hipGetDeviceProperties and not hipGetDevicePropertiesR0600; the
    facts of a device are asked of the one it has (Debian's runtime: no device, no facts)."""
    from strata_core.hip._hip_ffi import ffi
    from strata_core.hip.binding import device_facts

    runtime = ffi.dlopen("libamdhip64.so.5")
    assert lacks(runtime, ffi, "hipGetDevicePropertiesR0600")
    assert device_facts(ffi, runtime, 0)["index"] == 0
