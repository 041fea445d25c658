"""Rules of reference/AMD_HIP.md that the plan once got wrong, each against the page's words."""

import json
from functools import partial
from pathlib import Path

import pytest
from cli_runner import strata_core

from strata_core.kernels import topk_choice
from strata_core.tuning.switch_trials import TRIALS

FIXTURES = Path(__file__).parent / "fixtures/tables"
plan = partial(strata_core, "plan", "--json", "--os", "linux")


def kernels(env, gfx, *args, **switches):
    answer = json.loads(plan("--device", gfx, *args, env=env | switches).stdout)
    return answer["kernels"]


# "Past about 135K cells (and from about 90K cells on a prompt read) the top-k selection runs
# the wide kernel"; STRATA_TOPK_STREAM=0 runs "the register kernel in the 90K-135K band";
# STRATA_TOPK_OLD=1 "the original top-k kernel".
@pytest.mark.parametrize(
    ("cells", "prompt_read", "switches", "variant"),
    [
        (131_072, True, {}, "wide"),
        (131_072, False, {}, "heap"),
        (89_999, True, {}, "heap"),
        (90_000, True, {}, "wide"),
        (135_001, False, {}, "wide"),
        (131_072, True, {"STRATA_TOPK_STREAM": "0"}, "heap"),
        (131_072, False, {"STRATA_TOPK_STREAM": "0"}, "heap"),
        (200_000, True, {"STRATA_TOPK_STREAM": "0"}, "wide"),
        (200_000, True, {"STRATA_TOPK_OLD": "1"}, "old"),
    ],
)
def test_topk_bands(cells, prompt_read, switches, variant):
    assert topk_choice(switches, cells, prompt_read).variant == variant


def test_topk_stream_is_calibrated_on_a_prompt_read(env, tmp_path):
    """tune --switches measures STRATA_TOPK_STREAM=0 where it changes the kernel: the prompt
    read's top-k in the band (the register kernel against the wide one)."""
    trial = next(t for t in TRIALS if t.switch == "STRATA_TOPK_STREAM")
    assert trial.op == "topk_prompt"
    profile = tmp_path / "band.toml"
    profile.write_text('name = "band"\ncontext_cells = 100000\n')
    result = strata_core(
        "tune", "--switches", "--repeats", "3", "--profile", str(profile),
        "--config", str(tmp_path / "strata.toml"), env=env,
    )  # fmt: skip
    said = [line for line in result.stderr.splitlines() if "STRATA_TOPK_STREAM" in line]
    assert said and "runs topk_prompt the same way" not in said[0]


def test_the_plan_names_both_top_k_kernels(env):
    chosen = kernels(env, "gfx1201")
    assert chosen["topk_prompt"]["reason"].endswith(
        "131072 cells on a prompt read: from about 90K cells on a prompt read the top-k runs "
        "the wide kernel"
    )
    assert chosen["topk"]["reason"].endswith("131072 cells: below 135K the register (heap) kernel")


# Prompt GEMMs: "hipBLAS, or hipBLASLt with a matching tuning table"; STRATA_PF_GEMM "gfx11
# only ... RDNA4 runs neither"; the RDNA2 switches.
@pytest.mark.parametrize(
    ("gfx", "switches", "variant", "words"),
    [
        ("gfx1201", {}, "hipblas", "the prompt GEMMs run through hipBLAS"),
        ("gfx1201", {"STRATA_PF_GEMM": "1"}, "hipblas", "RDNA4 runs neither"),
        ("gfx1100", {}, "hipblas", "the prompt GEMMs run through hipBLAS"),
        ("gfx1100", {"STRATA_PF_GEMM": "1"}, "wmma", "the 128 x 256 WMMA GEMM"),
        ("gfx1030", {}, "rocblas", "hipBLASLt ships no gfx1030 kernels"),
        ("gfx1030", {"STRATA_HIP_PROMPT_F16": "1"}, "rocblas-f16", "FP16 in and out"),
        ("gfx1031", {"STRATA_RDNA2_SGEMM": "1"}, "rocblas-sgemm", "SGEMM"),
        (
            "gfx1030",
            {"STRATA_HIP_PROMPT_F16": "1", "STRATA_RDNA2_SGEMM": "1"},
            "rocblas-f16+sgemm",
            "the FP16 route runs first and SGEMM takes the products it leaves",
        ),
        ("gfx1201", {"STRATA_RDNA2_SGEMM": "all"}, "hipblas-sgemm", "on any AMD card"),
        ("gfx906", {}, "hipblas", "hipBLASLt is not used"),
        ("gfx1152", {"STRATA_PF_GEMM": "1"}, "hipblas", "gfx1152 builds portable kernels"),
    ],
)
def test_the_prompt_gemm_path(env, gfx, switches, variant, words):
    gemm = kernels(env, gfx, **switches)["prompt_gemm"]
    assert gemm["variant"] == variant and words in gemm["reason"]


def test_the_igpu_prompt_set_runs_the_wmma_gemm_on_the_780m(env):
    """ "STRATA_PF_GEMM=1  The prompt's FP16 projections on the 128 x 256 WMMA GEMM", on by
    default on the Radeon 780M (gfx1103, Linux)."""
    assert kernels(env, "gfx1103", "--integrated")["prompt_gemm"]["variant"] == "wmma"


def test_a_matching_hipblaslt_table_makes_the_path_hipblaslt(env, tmp_path):
    table = tmp_path / "gfx1201-hipblaslt-100202.txt"
    text = (FIXTURES / "gfx1151-hipblaslt-100401.txt").read_text()
    table.write_text(text.replace("gfx1151 100401", "gfx1201 100202"))
    env = env | {"STRATA_TUNING_DIR": str(tmp_path), "STRATA_HIPBLASLT_TABLE": "on"}
    gemm = kernels(env, "gfx1201", "--hipblaslt", "100202")["prompt_gemm"]
    assert gemm == {
        "variant": "hipblaslt",
        "reason": f"hipBLASLt with the tuning table {table}",
    }


def test_gfx1152_has_no_matrix_core_kernels(env):
    """ "gfx1152, Radeon 860M / 840M  Builds with a warning; portable kernels"."""
    chosen = kernels(
        env, "gfx1152", "--integrated", "--kv", "int8", STRATA_HIP_WMMA="1", STRATA_PF_GEMM="1"
    )
    assert chosen["prompt_attention"] == {
        "variant": "fp32",
        "reason": "gfx1152 builds with a warning; portable kernels",
    }
    assert chosen["prompt_gemm"]["variant"] != "wmma"


@pytest.mark.parametrize(
    ("gfx", "why"),
    [
        ("gfx906", "gfx906: hipBLASLt is not used"),
        (
            "gfx1030",
            "gfx1030: hipBLASLt ships no gfx1030 kernels, so there is no hipBLASLt table and "
            "the plain hipBLAS path runs",
        ),
    ],
)
def test_no_hipblaslt_table_where_the_engine_runs_no_hipblaslt(env, tmp_path, gfx, why):
    """gfx906: "hipBLASLt is not used"; gfx103x: "hipBLASLt ships no gfx1030 kernels, so there
    is no hipBLASLt table", whatever STRATA_HIPBLASLT_TABLE says and whatever lies in a
    folder; a forced file is named as not used."""
    name = f"{gfx}-hipblaslt-100401.txt"
    text = (FIXTURES / "gfx1151-hipblaslt-100401.txt").read_text()
    (tmp_path / name).write_text(text.replace("gfx1151", gfx))
    env = env | {
        "STRATA_TUNING_DIR": str(tmp_path),
        "STRATA_HIPBLASLT_TABLE": "on",
        "STRATA_HIPBLASLT_TUNING": str(tmp_path / name),
    }
    answer = json.loads(plan("--device", gfx, "--hipblaslt", "100401", env=env).stdout)
    assert answer["tuning"]["hipblaslt"] == {
        "table": None,
        "used": False,
        "reason": why,
        "rows": None,
    }
    assert f"hipBLASLt tuning table: none ({why})" in answer["log"]
    assert f"STRATA_HIPBLASLT_TUNING={tmp_path / name} is not used: {why}" in answer["warnings"]
    assert not answer["kernels"]["prompt_gemm"]["variant"].startswith("hipblaslt")
