"""The prompt GEMMs through the vendor libraries (AMD_HIP.md, "Tuning table", "rocBLAS
table"): the cffi bindings of cuBLASLt, hipBLASLt and rocBLAS against their stand-ins
(tests/fixtures/blas_stand_in.c: four solutions listed per shape, the third 1.25x faster than
the default), a GPU run that takes a table and counts refusals, and `strata-core tune` on a
card writing a table that the next plan takes."""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cli_runner import strata_core

from strata_core.blas.gemm import GemmShape
from strata_core.blas.open import open_blas
from strata_core.cuda.driver import CudaDriver
from strata_core.errors import StrataError
from strata_core.hip.runtime import HipRuntime
from strata_core.testing.sysfs import (
    MI50,
    R9700,
    RX_7900_XTX,
    fake_gpu,
    write_nvidia_gpu,
    write_sysfs,
)
from strata_core.tuning.dispatch import SolutionRefused
from strata_core.tuning.kinds import CUBLASLT, HIPBLASLT
from strata_core.tuning.tables import DEFAULT, read

#: the workload of tiny.toml with four prompt steps: three refusals, then the default
FOUR_PROMPTS = """name = "four-prompts"
hidden = 256
ffn = 128
experts = 64
experts_per_token = 6
context_cells = 5000
cells_kept = 32
prompt_tokens = 40
prompt_queries = 32
decode_steps = 1
prompt_steps = 4
gpu_read_bytes = 1048576
"""
SHAPE = GemmShape(tokens=6, n=5, k=7)


def _product(blas, runtime, solution, dtype=np.float16):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((SHAPE.tokens, SHAPE.k)).astype(dtype)
    w = rng.standard_normal((SHAPE.n, SHAPE.k)).astype(dtype)
    y = np.empty((SHAPE.tokens, SHAPE.n), np.float32)
    buffers = [runtime.malloc(a.nbytes) for a in (x, w, y)]
    stream = runtime.stream()
    for buffer, array in zip(buffers, (x, w), strict=False):
        runtime.upload(buffer, array, stream)
    at = [runtime.address(b) for b in buffers]
    try:
        blas.launcher(SHAPE, solution, *at, int(runtime.ffi.cast("uintptr_t", stream)))()
        runtime.download(y, buffers[2], stream)
    finally:
        for buffer in buffers:
            runtime.free(buffer)
    np.testing.assert_allclose(y, x.astype(np.float32) @ w.astype(np.float32).T, rtol=1e-5)


def test_cublaslt_lists_configurations_that_name_one_algorithm_each(stand_in):
    driver = CudaDriver([stand_in])
    driver.set_device(0)
    blas = open_blas("cublaslt", [stand_in], driver)
    assert (blas.library, blas.version, blas.kind) == ("cuBLASLt", "120804", CUBLASLT)
    listed = blas.solutions(SHAPE)
    assert listed == [DEFAULT, "22:19:12:1:0:0:0:2:3", "23:20:12:1:0:0:0:2:3",
                      "24:21:12:1:0:0:0:2:3"]  # fmt: skip
    problem = blas.problems[SHAPE]
    for solution in listed[1:]:  # built from its id, each is the algorithm the library listed
        assert bytes(blas.ffi.buffer(blas.build(SHAPE, solution))) == bytes(
            blas.ffi.buffer(problem.listed[solution])
        )
        _product(blas, driver, solution)
    _product(blas, driver, DEFAULT)
    for unknown in ("99:19:12:1:0:0:0:2:3", "22:19:12:4:0:0:0:2:3"):
        with pytest.raises(SolutionRefused, match="has no such algorithm"):
            _product(blas, driver, unknown)
    blas.close()


def test_hipblaslt_solution_ids_are_its_solution_indices(stand_in):
    runtime = HipRuntime([stand_in])
    blas = open_blas("hipblaslt", [stand_in], runtime)
    assert (blas.library, blas.version, blas.kind) == ("hipBLASLt", "100401", HIPBLASLT)
    assert blas.solutions(SHAPE) == [DEFAULT, "1002", "1003", "1004"]
    for solution in blas.solutions(SHAPE):
        _product(blas, runtime, solution)
    with pytest.raises(SolutionRefused, match=r"^hipblasLtMatmul returned status 3$"):
        _product(blas, runtime, "56537")
    blas.close()


@pytest.mark.parametrize(
    "path, dtype", [("rocblas-f16", np.float16), ("rocblas-sgemm", np.float32)]
)
def test_rocblas_runs_a_listed_solution_index_and_refuses_another(stand_in, path, dtype):
    runtime = HipRuntime([stand_in])
    blas = open_blas(path, [stand_in], runtime)
    assert (blas.library, blas.version) == ("rocBLAS", "5.6.0.8d1ae90e")
    assert blas.solutions(SHAPE) == [DEFAULT, "12", "13", "14"]
    for solution in blas.solutions(SHAPE):
        _product(blas, runtime, solution, dtype)
    with pytest.raises(SolutionRefused, match="rocblas_status_invalid_value"):
        _product(blas, runtime, "99", dtype)
    blas.close()


def test_a_rocblas_without_the_listing_call_runs_its_default_and_tune_says_why_not(
    stand_in, tmp_path
):
    """rocblas_gemm_ex_get_solutions is a beta API that only tune uses: without it the
    default GEMM runs, and listing the solutions is one line naming the call."""
    library = tmp_path / "librocblas.so.5"
    fixtures = Path(__file__).parent / "fixtures"
    subprocess.run(
        [shutil.which("cc") or "gcc", "-shared", "-fPIC", "-DSTAND_IN_WITHOUT_LISTING",
         "-o", str(library), str(fixtures / "hip_stand_in.c"), str(fixtures / "blas_stand_in.c")],
        check=True,
    )  # fmt: skip
    runtime = HipRuntime([stand_in])
    blas = open_blas("rocblas-f16", [str(library)], runtime)
    _product(blas, runtime, DEFAULT, np.float16)
    with pytest.raises(StrataError, match=rf"{library} has no rocblas_gemm_ex_get_solutions$"):
        blas.solutions(SHAPE)
    blas.close()


def test_a_missing_library_is_one_line(stand_in, tmp_path):
    driver = CudaDriver([stand_in])
    missing = str(tmp_path / "libcublasLt.so.12")
    with pytest.raises(Exception, match=rf"^no cuBLASLt found \(tried {missing}\)$"):
        open_blas("cublaslt", [missing], driver)


@pytest.fixture
def card(tmp_path, env, stand_in, emulating_stand_in, nvml_stand_in):
    """`strata-core CMD` on an H200 the stand-in plays, cuBLASLt its stand-in, the four-prompt
    workload, tables calibrated into this test's data folder. A run's kernels compute (the
    emulating stand-in); a calibration needs only the GEMMs (the plain one, whose read kernel
    that holds the timed launches costs nothing)."""
    root = write_nvidia_gpu(tmp_path / "sys", "0000:41:00.0")
    profile = tmp_path / "four.toml"
    profile.write_text(FOUR_PROMPTS)
    base = env | {
        "STRATA_CUDA_PROBE": "1",
        "STRATA_NVML_LIBRARY": nvml_stand_in,
        "STAND_IN_ARCH": "sm_90",
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }

    def command(name, *args, **more):
        library = emulating_stand_in if name == "run" else stand_in
        drivers = {"STRATA_CUDA_LIBRARY": library, "STRATA_CUBLASLT_LIBRARY": library}
        options = ("--sysfs", str(root), "--profile", str(profile))
        return strata_core(name, *options, *args, env=base | drivers | more, check=False)

    return command


def _table(tmp_path, solution):
    path = tmp_path / CUBLASLT.file_name("sm_90", "120804")
    path.write_text(
        "# strata-tuning columns=T,N,K,dtype,op,solution,default_us,best_us min_gain=1.05\n"
        f"STRATA_CUBLASLT_TUNING_V1 sm_90 120804\n40 128 256 f16 prompt {solution} 50 40\n"
    )
    return path


def test_a_refused_solution_falls_back_three_times_then_for_good(card, tmp_path):
    table = _table(tmp_path, "99:19:12:1:0:0:0:2:3")
    result = card("run", "--json", STRATA_CUBLASLT_TUNING=str(table), STRATA_CUBLASLT_VERBOSE="1")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "cuBLASLt GEMM" in line]
    shape = "40 128 256 f16 prompt"
    refused = f"solution 99:19:12:1:0:0:0:2:3 for {shape} refused"
    why = "(cuBLASLt has no such algorithm for the GEMM T=40 N=128 K=256)"
    assert lines == [
        f"strata-core: cuBLASLt GEMM: {shape} -> 99:19:12:1:0:0:0:2:3",
        f"strata-core: cuBLASLt GEMM: {refused} {why}; fallback to the default for this call",
        f"strata-core: cuBLASLt GEMM: {refused} {why}; fallback to the default for this call",
        f"strata-core: warning: cuBLASLt GEMM: {refused} 3 times {why}; the default runs from "
        "now on",
        "strata-core: cuBLASLt GEMM: tuned_launches=0 fallbacks=3 default_launches=4 disabled=1",
    ]
    gemm = json.loads(result.stdout)["kernels"]["prompt_gemm"]
    assert gemm["calls"] == gemm["checked"] == 4
    assert "with the tuning table" in gemm["reason"]


def test_tune_on_a_card_writes_the_table_the_next_plan_takes(card, tmp_path):
    tuned = card("tune", "--tokens", "40,64", "--repeats", "3")
    assert tuned.returncode == 0, tuned.stderr
    path = tmp_path / "data/strata/tuning/sm_90-cublaslt-120804.txt"
    said = tuned.stderr.splitlines()
    assert said[0].startswith("strata-core: tune: cuBLASLt 120804 (")
    assert said[1] == (
        "strata-core: tune: [1/2] T=40 prompt 128x256 f16: 23:20:12:1:0:0:0:2:3 1.25x, default "
        "50.0 us, 4 solutions measured"
    )
    assert said[-1] == (
        f"strata-core: tune: wrote 2 rows (2 tuned) to {path}; STRATA_CUBLASLT_TABLE=on takes it"
    )
    table = read(path)
    assert [(row.key, row.solution) for row in table.rows] == [
        ((40, 128, 256, "f16", "prompt"), "23:20:12:1:0:0:0:2:3"),
        ((64, 128, 256, "f16", "prompt"), "23:20:12:1:0:0:0:2:3"),
    ]
    assert table.meta["timer"] == "events" and table.meta["verified"] == "rtol2e-3"
    checked = strata_core("table", "check", str(path), env={})
    assert checked.stdout.endswith(
        "ok: cuBLASLt table for sm_90, version 120804, 2 rows (2 tuned)\n"
    )

    off = json.loads(card("plan", "--json").stdout)
    assert not off["tuning"]["cublaslt"]["used"]
    plan = json.loads(card("plan", "--json", STRATA_CUBLASLT_TABLE="on").stdout)
    assert plan["tuning"]["cublaslt"] == {
        "table": str(path), "used": True, "rows": 2,
        "reason": "sm_90-cublaslt-120804.txt matches sm_90 and cuBLASLt 120804",
    }  # fmt: skip
    assert "cuBLASLt tuning enabled (2 rows, sm_90, version 120804)" in plan["log"]

    ran = card("run", "--json", STRATA_CUBLASLT_TABLE="on", STRATA_CUBLASLT_VERBOSE="1")
    assert ran.returncode == 0, ran.stderr
    assert (
        "strata-core: cuBLASLt GEMM: tuned_launches=4 fallbacks=0 default_launches=0 disabled=0"
    ) in ran.stderr.splitlines()

    other = path.with_name("sm_90-cublaslt-120900.txt")  # calibrated with another cuBLASLt
    other.write_text(path.read_text().replace(" 120804", " 120900"))
    path.unlink()
    decision = json.loads(card("plan", "--json", STRATA_CUBLASLT_TABLE="on").stdout)["tuning"]
    assert not decision["cublaslt"]["used"]
    assert decision["cublaslt"]["reason"].endswith("(there: sm_90-cublaslt-120900.txt)")


def test_tune_on_an_amd_card_calibrates_the_library_of_its_table(tmp_path, env, stand_in):
    """gfx1201's plain hipBLAS path takes a hipBLASLt table: tune calibrates hipBLASLt."""
    root = write_sysfs(tmp_path / "sys", [R9700])
    carried = env | {
        "STRATA_HIP_LIBRARY": stand_in,
        "STRATA_HIPBLASLT_LIBRARY": stand_in,
        "STRATA_ROCBLAS_LIBRARY": stand_in,
        "STAND_IN_ARCH": "gfx1201",
        "STAND_IN_WARP": "32",
    }
    profile = Path(__file__).parent / "fixtures/profiles/tiny.toml"
    out = tmp_path / "tables"
    out.mkdir()
    result = strata_core(
        "tune", "--sysfs", str(root), "--profile", str(profile), "--tokens", "40",
        "--output", str(out), env=carried,
    )  # fmt: skip
    assert result.stderr.splitlines()[-1] == (
        f"strata-core: tune: wrote 1 row (1 tuned) to {out / 'gfx1201-hipblaslt-100401.txt'}; "
        "STRATA_HIPBLASLT_TABLE=on takes it"
    )
    (row,) = read(out / "gfx1201-hipblaslt-100401.txt").rows
    assert (row.key, row.solution) == ((40, 128, 256, "f16", "prompt"), "1003")


def test_tune_on_a_card_writes_any_output_name_and_says_how_it_is_taken(card, tmp_path):
    """AMD_HIP.md: "--tuning-out table.txt ... or point STRATA_HIPBLASLT_TUNING at it"."""
    mine = tmp_path / "mine.txt"
    result = card("tune", "--tokens", "40", "--repeats", "3", "--output", str(mine))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"strata-core: tune: wrote 1 row (1 tuned) to {mine}; the folder lookup takes it only "
        "as sm_90-cublaslt-120804.txt, STRATA_CUBLASLT_TUNING under any name"
    )
    plan = json.loads(card("plan", "--json", STRATA_CUBLASLT_TUNING=str(mine)).stdout)
    assert plan["tuning"]["cublaslt"]["used"]


def test_tune_host_calibrates_the_host_backend_where_a_card_runs(
    tmp_path, env, stand_in, nvml_stand_in
):
    root = write_nvidia_gpu(tmp_path / "sys", "0000:41:00.0")
    carried = env | {
        "STRATA_CUDA_PROBE": "1",
        "STRATA_CUDA_LIBRARY": stand_in,
        "STRATA_NVML_LIBRARY": nvml_stand_in,
    }
    case = ("tune", "--sysfs", str(root), "--host", "--case", "32,qkv,96,64,f32")
    result = strata_core(*case, "--repeats", "3", "--output", str(tmp_path), env=carried)
    (table,) = tmp_path.glob("*-host-*.txt")
    assert result.stderr.splitlines()[-1].startswith("strata-core: tune: wrote 1 row (")
    assert read(table).kind.name == "host"
    profile = Path(__file__).parent / "fixtures/profiles/tiny.toml"
    refused = strata_core(*case, "--profile", str(profile), env=carried, check=False)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "strata-core: error: --profile gives the shapes of a card's calibration or of tune "
        "--switches; the host backend's calibration takes --case"
    ]


def test_tune_where_the_prompt_gemms_run_no_library_is_one_line(tmp_path, env, stand_in):
    root = write_sysfs(tmp_path / "sys", [RX_7900_XTX])
    carried = env | {
        "STRATA_HIP_LIBRARY": stand_in,
        "STAND_IN_ARCH": "gfx1100",
        "STAND_IN_WARP": "32",
        "STRATA_PF_GEMM": "1",
    }
    result = strata_core("tune", "--sysfs", str(root), env=carried, check=False)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "strata-core: error: tune: the prompt GEMMs on Radeon RX 7900 XTX run no vendor "
        "library (STRATA_PF_GEMM=1: the prompt's FP16 projections on the 128 x 256 WMMA GEMM); "
        "nothing to calibrate on the card (--host calibrates the host backend)"
    ]


#: an AMD card's path whose table names a solution its library does not list: the card, the
#: library, the prompt's tokens (rocBLAS rows are token buckets), the table's header and row,
#: what the plan's path is called, and its switches
AMD_REFUSALS = {
    "hipblaslt": (R9700, "gfx1201", "hipBLASLt", 40,
                  "columns=T,N,K,dtype,op,solution,default_us,best_us",
                  "STRATA_HIPBLASLT_TUNING_V1 gfx1201 100401",
                  "40 128 256 f16 prompt 56537 50 40", "hipblaslt", {}),
    "rocblas": (fake_gpu("gfx1030"), "gfx1030", "rocBLAS", 256,
                "columns=T,N,K,ldy,solution,default_us,best_us",
                "STRATA_ROCBLAS_TUNING_V1 gfx1030 5.6.0.8d1ae90e",
                "256 128 256 128 99 50 40", "rocblas-f16", {"STRATA_HIP_PROMPT_F16": "1"}),
}  # fmt: skip


@pytest.mark.parametrize("library", AMD_REFUSALS)
def test_a_table_the_library_refuses_falls_back_on_an_amd_card(
    tmp_path, env, emulating_stand_in, library
):
    gpu, arch, label, tokens, columns, identity, row, variant, more = AMD_REFUSALS[library]
    root = write_sysfs(tmp_path / "sys", [gpu])
    profile = tmp_path / "prompts.toml"
    profile.write_text(FOUR_PROMPTS.replace("prompt_tokens = 40", f"prompt_tokens = {tokens}"))
    table = tmp_path / "table.txt"
    table.write_text(f"# strata-tuning {columns} min_gain=1.05\n{identity}\n{row}\n")
    prefix = f"STRATA_{library.upper()}"
    carried = env | more | {
        "STRATA_HIP_LIBRARY": emulating_stand_in,
        f"{prefix}_LIBRARY": emulating_stand_in,
        "STAND_IN_ARCH": arch,
        "STAND_IN_WARP": "32",
        f"{prefix}_TUNING": str(table),
        f"{prefix}_VERBOSE": "1",
    }  # fmt: skip
    result = strata_core(
        "run", "--json", "--sysfs", str(root), "--profile", str(profile), env=carried
    )
    said = result.stderr.splitlines()
    assert sum("; fallback to the default for this call" in line for line in said) == 2
    assert sum("times" in line and "the default runs from now on" in line for line in said) == 1
    assert said[-1] == (
        f"strata-core: {label} GEMM: tuned_launches=0 fallbacks=3 default_launches=4 disabled=1"
    )
    gemm = json.loads(result.stdout)["kernels"]["prompt_gemm"]
    assert (gemm["variant"], gemm["calls"], gemm["checked"]) == (variant, 4, 4)


def test_tune_on_a_card_that_takes_no_table_is_one_line(tmp_path, env, stand_in):
    root = write_sysfs(tmp_path / "sys", [MI50])
    carried = env | {
        "STRATA_HIP_LIBRARY": stand_in,
        "STAND_IN_ARCH": "gfx906",
        "STAND_IN_WARP": "64",
    }
    result = strata_core("tune", "--sysfs", str(root), env=carried, check=False)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("strata-core: error: tune: ")
    assert "(gfx906) takes no tuning table" in line
    assert line.endswith("nothing to calibrate on the card (--host calibrates the host backend)")
