"""The cuda plugin's kernel library: the HIP source built by clang as PTX, one module per
compute capability, read back without a GPU (the PTX reader and the text itself)."""

import re

import pytest

from strata_core.api.manager import PluginManager
from strata_core.errors import StrataError
from strata_core.gpu import abi, ptx
from strata_core.gpu.library import ABI_VERSION, launch_problems

LIBRARY = PluginManager.discover({}).kernel_libraries()["cuda"]
TARGETS = ("sm_80", "sm_86", "sm_89", "sm_90")


def test_one_ptx_module_per_compute_capability():
    assert LIBRARY.targets == TARGETS and LIBRARY.missing == () and LIBRARY.problems == ()
    assert all(path.suffix == ".ptx" for path in LIBRARY.code_objects.values())


@pytest.mark.parametrize("target", TARGETS)
def test_each_module_is_the_kernel_abi_for_its_target(target):
    path = LIBRARY.code_objects[target]
    code = ptx.read(path)
    assert code.target == target
    assert code.abi_version == ABI_VERSION
    assert code.operations == tuple(abi.OPERATIONS)
    assert set(code.kernels) == {f"strata_{op}" for op in abi.OPERATIONS}
    assert launch_problems(code, target) == []
    assert code.prompt_gemm == "fma"  # NVIDIA's: a 16 x 16 tile a workgroup, from LDS
    text = path.read_text()
    assert f".target {target}" in text
    assert "dp4a.s32.s32" in text  # the int8 dot4 of matvec_q8_0
    assert re.search(r"shfl\.sync\.bfly", text)  # the logical warp is the CUDA warp


#: the lowest PTX ISA each target allows (NVIDIA's PTX ISA notes), which the 535 driver
#: branch (CUDA 12.2) and every later one loads
LOWEST_ISA = {"sm_80": "7.0", "sm_86": "7.1", "sm_89": "7.8", "sm_90": "7.8"}


@pytest.mark.parametrize("target", TARGETS)
def test_each_module_is_built_at_the_lowest_ptx_isa_its_target_allows(target):
    text = LIBRARY.code_objects[target].read_text()
    assert re.search(r"^\.version (\S+)$", text, re.M).group(1) == LOWEST_ISA[target]
    assert ptx.read(LIBRARY.code_objects[target]).ptx_isa == tuple(
        int(part) for part in LOWEST_ISA[target].split(".")
    )


def test_a_module_with_another_layout_is_refused(tmp_path):
    path = LIBRARY.code_objects["sm_90"]
    text = path.read_text().replace(
        ".param .u32 strata_topk_param_4", ".param .u64 strata_topk_param_4"
    )
    changed = tmp_path / path.name
    changed.write_text(text)
    problems = launch_problems(ptx.read(changed), "sm_90")
    assert len(problems) == 1 and problems[0].startswith(f"{path.name}: topk: metadata lays out ")


def test_a_module_that_names_no_prompt_gemm_is_refused(tmp_path):
    """The launcher sizes the prompt GEMM's grid by the kernel the module says it carries;
    a module that says none (or one the launcher does not know) is not launched."""
    path = LIBRARY.code_objects["sm_90"]
    changed = tmp_path / path.name
    for renamed in ("strata_prompt_gemm_kinds", "strata_prompt_gemm_kind"):
        text = path.read_text()
        if renamed == "strata_prompt_gemm_kind":  # the same symbol, naming an unknown kernel
            text = text.replace("{102, 109, 97}", "{120, 109, 97}")
        else:
            text = text.replace("strata_prompt_gemm_kind", renamed)
        changed.write_text(text)
        code = ptx.read(changed)
        assert code.prompt_gemm == ("" if renamed.endswith("s") else "xma")
        assert launch_problems(code, "sm_90") == [
            f"{path.name} names no prompt GEMM kernel of wmma, fma"
        ]


def test_a_file_that_is_no_ptx_is_one_line(tmp_path):
    bogus = tmp_path / "strata_kernels-sm_90.ptx"
    bogus.write_text("not ptx\n")
    with pytest.raises(StrataError, match=r"not a PTX module \(no \.target line\)$"):
        ptx.read(bogus)
