"""What a PTX module of the kernel library says about itself, read from its text without a
GPU: the target, the ABI version and operations it exports, and each kernel's parameters,
laid out as the driver lays out a launch's parameter buffer (each at its natural alignment).
PTX does not say which 64-bit parameter is a pointer, so only offsets and sizes are known."""

from __future__ import annotations

import re
from pathlib import Path

from .. import bounded
from ..errors import StrataError
from .code_object import KERNEL_PREFIX, CodeObject, Kernel, KernelArg, text_global

#: PTX's own word for a parameter whose kind it does not record
PARAM = "param"
WARP = 32
#: the most threads a CUDA block may have, where a kernel names no .maxntid
MAX_THREADS = 1024
_TARGET = re.compile(r"^\.target\s+(sm_\w+)", re.M)
_VERSION = re.compile(r"^\.version\s+(\d+)\.(\d+)", re.M)
#: the CUDA release whose driver first loads each PTX ISA version (NVIDIA's PTX ISA notes)
PTX_ISA_CUDA = {
    (7, 0): (11, 0), (7, 1): (11, 1), (7, 2): (11, 2), (7, 3): (11, 3), (7, 4): (11, 4),
    (7, 5): (11, 5), (7, 6): (11, 6), (7, 7): (11, 7), (7, 8): (11, 8), (8, 0): (12, 0),
    (8, 1): (12, 1), (8, 2): (12, 2), (8, 3): (12, 3), (8, 4): (12, 4), (8, 5): (12, 5),
    (8, 6): (12, 7), (8, 7): (12, 8), (8, 8): (12, 9), (9, 0): (13, 0),
}  # fmt: skip
#: the first Linux driver branch of each CUDA release
CUDA_DRIVER_BRANCH = {
    (11, 0): 450, (11, 1): 455, (11, 2): 460, (11, 3): 465, (11, 4): 470, (11, 5): 495,
    (11, 6): 510, (11, 7): 515, (11, 8): 520, (12, 0): 525, (12, 1): 530, (12, 2): 535,
    (12, 3): 545, (12, 4): 550, (12, 5): 555, (12, 6): 560, (12, 7): 565, (12, 8): 570,
    (12, 9): 575, (13, 0): 580,
}  # fmt: skip
_CONST_U32 = re.compile(r"\.const\s+\.align\s+\d+\s+\.u32\s+(\w+)\s*=\s*(\d+);")
_CONST_BYTES = re.compile(r"\.const\s+\.align\s+\d+\s+\.b8\s+(\w+)\[\d+\]\s*=\s*\{([\d,\s]*)\};")
_ENTRY = re.compile(r"\.entry\s+(\w+)\(\s*(.*?)\)\s*(.*?)\{", re.S)
_PARAM = re.compile(r"\.param\s+\.(?:u|s|b|f)(8|16|32|64)\b")
_MAXNTID = re.compile(r"\.maxntid\s+(\d+)\s*,\s*(\d+)\s*,\s*(\d+)")


def read(path: Path) -> CodeObject:
    """Read a PTX module; a file that is not one stops with its path and what is wrong."""
    try:
        text = bounded.read_bytes(path, bounded.KERNEL_CODE).decode("ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise StrataError(f"{path}: cannot read the PTX module ({exc})") from None
    target = _TARGET.search(text)
    if target is None:
        raise StrataError(f"{path}: not a PTX module (no .target line)")
    numbers = dict(_CONST_U32.findall(text))
    blobs = {name: bytes(int(b) for b in body.split(",") if b.strip()) for name, body in
             _CONST_BYTES.findall(text)}  # fmt: skip
    operations = text_global(blobs, "strata_operations")
    kernels = {}
    for name, params, directives in _ENTRY.findall(text):
        if name.startswith(KERNEL_PREFIX):
            kernels[name] = _kernel(name, params, directives)
    abi = numbers.get("strata_abi_version")
    version = _VERSION.search(text)
    return CodeObject(
        path=path,
        target=target.group(1),
        abi_version=int(abi) if abi is not None else None,
        operations=tuple(operations.split(",")) if operations else (),
        kernels=kernels,
        arg_kinds_known=False,
        ptx_isa=(int(version.group(1)), int(version.group(2))) if version else None,
        prompt_gemm=text_global(blobs, "strata_prompt_gemm_kind"),
    )


def driver_refusal(code: CodeObject, driver_version: int, driver: str) -> str | None:
    """Why the CUDA driver ``driver`` (``cuDriverGetVersion``: 12020 is CUDA 12.2) cannot
    load the PTX module ``code``, in one line; None when it can, or when the module's ISA is
    one this table does not know (the driver then decides)."""
    if code.ptx_isa not in PTX_ISA_CUDA:
        return None
    needs = PTX_ISA_CUDA[code.ptx_isa]
    has = (driver_version // 1000, driver_version % 1000 // 10)
    if has >= needs:
        return None
    isa, cuda = "%d.%d" % code.ptx_isa, "%d.%d" % needs
    return (
        f"the CUDA driver {driver} is CUDA {has[0]}.{has[1]}; {code.path.name} is PTX ISA "
        f"{isa}, which needs CUDA {cuda} (driver {CUDA_DRIVER_BRANCH[needs]} or newer): "
        "update the NVIDIA driver"
    )


def _kernel(name: str, params: str, directives: str) -> Kernel:
    args, offset = [], 0
    for bits in _PARAM.findall(params):
        size = int(bits) // 8
        offset = (offset + size - 1) // size * size
        args.append(KernelArg(offset, size, PARAM))
        offset += size
    threads = _MAXNTID.search(directives)
    most = MAX_THREADS
    if threads:
        most = int(threads.group(1)) * int(threads.group(2)) * int(threads.group(3))
    return Kernel(name, tuple(args), offset, WARP, most)
