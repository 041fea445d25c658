"""What every plugin's code objects contain, checked with LLVM's own tools and the ELF reader:
nothing here runs on a GPU."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from strata_core.api.arch import MatrixCores
from strata_core.api.manager import PluginManager
from strata_core.api.records import KernelLibrary
from strata_core.gpu import abi, code_object
from strata_core.gpu.library import ABI_VERSION

LLVM_TOOLS = ("llvm-objdump-19", "llvm-readelf-19")
#: VOP2 encoding of v_dot4_i32_i8 (accumulating into the destination) that LLVM picks on gfx10
DOT4_ENCODINGS = {"v_dot4_i32_i8": {"v_dot4_i32_i8", "v_dot4c_i32_i8"}}
#: what the plugins say each target is
RECORDS = PluginManager.discover({}).arch_records()


def _libraries() -> dict[str, tuple[tuple[str, ...], KernelLibrary]]:
    """The AMD plugins' kernel libraries (the cuda plugin's PTX: tests/test_cuda_ptx.py)."""
    manager = PluginManager.discover({})
    libraries = manager.kernel_libraries()
    return {
        name: (manager.records[name].targets, lib)
        for name, lib in libraries.items()
        if name != "cuda"
    }


LIBRARIES = _libraries()
CASES = [
    pytest.param(plugin, target, id=f"{plugin}-{target}")
    for plugin, (targets, _) in LIBRARIES.items()
    for target in targets
]


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is missing (Debian: apt-get install llvm-19)"
    return path


def _disassembly(path: Path, kernel: str) -> str:
    """The instructions of one kernel, from llvm-objdump."""
    out = subprocess.run(
        [_tool("llvm-objdump-19"), "-d", f"--disassemble-symbols={kernel}", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"<{kernel}>:" in out
    return out


def _code(plugin: str, target: str) -> code_object.CodeObject:
    _, library = LIBRARIES[plugin]
    assert library.problems == ()
    return code_object.read(library.code_objects[target])


def test_every_in_tree_gpu_plugin_has_a_kernel_library():
    assert set(LIBRARIES) == {"gfx906", "hip_rdna2", "hip_rdna3", "hip_rdna4", "igpu"}
    for targets, library in LIBRARIES.values():
        assert library.targets == targets and library.missing == ()


@pytest.mark.parametrize(("plugin", "target"), CASES)
def test_the_elf_names_its_target(plugin, target):
    code = _code(plugin, target)
    header = subprocess.run(
        [_tool("llvm-readelf-19"), "--file-header", str(code.path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert re.search(rf"Flags:\s+0x[0-9A-Fa-f]+, {target}\b", header)
    assert code.target == target


@pytest.mark.parametrize(("plugin", "target"), CASES)
def test_the_kernels_are_the_abi_operations(plugin, target):
    code = _code(plugin, target)
    operations = tuple(abi.OPERATIONS)
    assert code.abi_version == ABI_VERSION
    assert code.operations == operations
    assert set(code.kernels) == {code_object.KERNEL_PREFIX + op for op in operations}


@pytest.mark.parametrize(("plugin", "target"), CASES)
def test_the_argument_layout_is_what_the_launcher_packs(plugin, target):
    code = _code(plugin, target)
    assert abi.layout_problems(code) == []
    kernel = code.kernel("router_topk")
    packed = abi.pack(
        "router_topk",
        {"logits": 0x1000, "tokens": 512, "experts": 128, "k": 8, "ids": 0x2000,
         "weights": 0x3000, "variant": 1},
        kernel,
    )  # fmt: skip
    fields = [int.from_bytes(packed[a.offset : a.offset + a.size], "little") for a in kernel.args]
    assert fields == [0x1000, 512, 128, 8, 0x2000, 0x3000, 1]


@pytest.mark.parametrize(("plugin", "target"), CASES)
def test_the_wavefront_size(plugin, target):
    code = _code(plugin, target)
    assert code.wavefront_sizes == {RECORDS[target].wave_size}
    assert code.wavefront_sizes == ({64} if target == "gfx906" else {32})


@pytest.mark.parametrize(("plugin", "target"), CASES)
def test_matrix_cores_in_the_gemm_exactly_where_the_architecture_has_them(plugin, target):
    code = _code(plugin, target)
    gemm = _disassembly(code.path, "strata_prompt_gemm")
    uses_wmma = "v_wmma_f32_16x16x16_f16" in gemm
    assert uses_wmma == (RECORDS[target].matrix_cores is MatrixCores.WMMA)
    assert code.prompt_gemm == ("wmma" if uses_wmma else "fma")  # what the launcher reads
    assert uses_wmma == target.startswith(("gfx11", "gfx12"))
    if not uses_wmma:
        assert "v_fma" in gemm or "v_fmac" in gemm


@pytest.mark.parametrize(("plugin", "target"), CASES)
def test_the_int8_dot_instruction_is_the_one_the_page_names(plugin, target):
    code = _code(plugin, target)
    matvec = _disassembly(code.path, "strata_matvec_q8_0")
    found = set(re.findall(r"\bv_dot4c?_i32_i?u?8\b", matvec))
    named = RECORDS[target].int8_dot
    assert found and found <= DOT4_ENCODINGS.get(named, {named})
    assert ("v_dot4_i32_iu8" in found) == target.startswith(("gfx11", "gfx12"))


def test_the_gfx906_build_keeps_its_warp_reductions_inside_half_a_wavefront():
    code = _code("gfx906", "gfx906")
    matvec = _disassembly(code.path, "strata_matvec_q8_0")
    assert "v_mbcnt_hi_u32_b32" in matvec  # the lane index counts all 64 lanes
    # xor 16, 8, 4, 2, 1 for each of the warp's two rows, in each of the four splits along K:
    # never across halves
    assert matvec.count("ds_bpermute_b32") == 4 * 2 * 5
