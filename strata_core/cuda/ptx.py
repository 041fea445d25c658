"""What a PTX module of the kernel library says about itself, read from its text without a
GPU: the target, the ABI version and operations it exports, and each kernel's parameters,
laid out as the driver lays out a launch's parameter buffer (each at its natural alignment).
PTX does not say which 64-bit parameter is a pointer, so only offsets and sizes are known."""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import StrataError
from ..hip.code_object import KERNEL_PREFIX, CodeObject, Kernel, KernelArg

#: PTX's own word for a parameter whose kind it does not record
PARAM = "param"
WARP = 32
#: the most threads a CUDA block may have, where a kernel names no .maxntid
MAX_THREADS = 1024
_TARGET = re.compile(r"^\.target\s+(sm_\w+)", re.M)
_CONST_U32 = re.compile(r"\.const\s+\.align\s+\d+\s+\.u32\s+(\w+)\s*=\s*(\d+);")
_CONST_BYTES = re.compile(r"\.const\s+\.align\s+\d+\s+\.b8\s+(\w+)\[\d+\]\s*=\s*\{([\d,\s]*)\};")
_ENTRY = re.compile(r"\.entry\s+(\w+)\(\s*(.*?)\)\s*(.*?)\{", re.S)
_PARAM = re.compile(r"\.param\s+\.(?:u|s|b|f)(8|16|32|64)\b")
_MAXNTID = re.compile(r"\.maxntid\s+(\d+)\s*,\s*(\d+)\s*,\s*(\d+)")


def read(path: Path) -> CodeObject:
    """Read a PTX module; a file that is not one stops with its path and what is wrong."""
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise StrataError(f"{path}: cannot read the PTX module ({exc})") from None
    target = _TARGET.search(text)
    if target is None:
        raise StrataError(f"{path}: not a PTX module (no .target line)")
    numbers = dict(_CONST_U32.findall(text))
    blobs = {name: bytes(int(b) for b in body.split(",") if b.strip()) for name, body in
             _CONST_BYTES.findall(text)}  # fmt: skip
    operations = blobs.get("strata_operations", b"").rstrip(b"\0").decode()
    kernels = {}
    for name, params, directives in _ENTRY.findall(text):
        if name.startswith(KERNEL_PREFIX):
            kernels[name] = _kernel(name, params, directives)
    abi = numbers.get("strata_abi_version")
    return CodeObject(
        path=path,
        target=target.group(1),
        abi_version=int(abi) if abi is not None else None,
        operations=tuple(operations.split(",")) if operations else (),
        kernels=kernels,
        arg_kinds_known=False,
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
