"""What a GPU code object says about itself, read without a GPU: the records below, shared
with the CUDA backend's PTX reader (strata_core.gpu.ptx), and the HIP code object reader (its
ELF: the target, the ABI version and operations it exports, and each kernel's metadata from
NT_AMDGPU_METADATA)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import msgpack
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection, SymbolTableSection

from .. import bounded
from ..errors import StrataError

NT_AMDGPU_METADATA = 32
KERNEL_PREFIX = "strata_"


@attrs.frozen
class KernelArg:
    offset: int
    size: int
    value_kind: str


@attrs.frozen
class Kernel:
    name: str
    args: tuple[KernelArg, ...]
    kernarg_size: int
    wavefront_size: int
    max_workgroup_size: int

    @property
    def explicit_args(self) -> tuple[KernelArg, ...]:
        """The arguments the launcher packs; the runtime fills the hidden_* ones."""
        return tuple(a for a in self.args if not a.value_kind.startswith("hidden_"))


@attrs.frozen
class CodeObject:
    path: Path
    target: str
    abi_version: int | None
    operations: tuple[str, ...]
    kernels: dict[str, Kernel]
    #: False where the format records argument offsets and sizes but not their kinds (PTX)
    arg_kinds_known: bool = True
    #: the PTX ISA version a PTX module declares (``.version 7.8`` is (7, 8)); None for ELF
    ptx_isa: tuple[int, int] | None = None
    #: the prompt GEMM kernel the source compiled for this target (its strata_prompt_gemm_kind):
    #: ``wmma`` (a tile a logical warp) or ``fma`` (a tile a workgroup); "" where it says none
    prompt_gemm: str = ""

    def kernel(self, operation: str) -> Kernel:
        return self.kernels[KERNEL_PREFIX + operation]

    @property
    def wavefront_sizes(self) -> set[int]:
        return {k.wavefront_size for k in self.kernels.values()}


def read(path: Path) -> CodeObject:
    """Read a code object; a file that is not one stops with its path and what is wrong."""
    try:
        with open(path, "rb") as stream:
            bounded.check_size(stream, bounded.KERNEL_CODE, str(path))
            elf = ELFFile(stream)
            if elf["e_machine"] != "EM_AMDGPU":
                raise StrataError(f"{path}: not an AMDGPU code object ({elf['e_machine']})")
            metadata = _metadata(elf, path)
            globals_ = _globals(elf)
    except (OSError, ELFError, ValueError, KeyError, msgpack.UnpackException) as exc:
        raise StrataError(f"{path}: cannot read the code object ({exc})") from None
    target = metadata.get("amdhsa.target", "").rsplit("-", 1)[-1]
    abi = globals_.get("strata_abi_version")
    operations = text_global(globals_, "strata_operations")
    return CodeObject(
        path=path,
        target=target,
        abi_version=int.from_bytes(abi, "little") if abi is not None else None,
        operations=tuple(operations.split(",")) if operations else (),
        kernels={k.name: k for k in map(_kernel, metadata.get("amdhsa.kernels", ()))},
        prompt_gemm=text_global(globals_, "strata_prompt_gemm_kind"),
    )


def text_global(found: dict[str, bytes], name: str) -> str:
    """An exported string (its bytes up to the terminating zero); "" where it is missing or
    not ASCII."""
    try:
        return found.get(name, b"").split(b"\0", 1)[0].decode("ascii")
    except UnicodeDecodeError:
        return ""


def _metadata(elf: ELFFile, path: Path) -> dict[str, Any]:
    for section in elf.iter_sections():
        if not isinstance(section, NoteSection):
            continue
        for note in section.iter_notes():
            # pyelftools types n_type as str, but passes a type it has no name for (this
            # one) through as its number
            n_type: str | int = note["n_type"]
            if note["n_name"] == "AMDGPU" and n_type == NT_AMDGPU_METADATA:
                metadata: dict[str, Any] = msgpack.unpackb(note["n_desc"], raw=False)
                return metadata
    raise StrataError(f"{path}: the code object has no AMDGPU metadata note")


def _globals(elf: ELFFile) -> dict[str, bytes]:
    """The bytes of each strata_* data symbol (the exported ABI version and operations)."""
    symbols = elf.get_section_by_name(".symtab") or elf.get_section_by_name(".dynsym")
    if not isinstance(symbols, SymbolTableSection):
        return {}
    found = {}
    for symbol in symbols.iter_symbols():
        if symbol.name.startswith(KERNEL_PREFIX) and symbol["st_info"]["type"] == "STT_OBJECT":
            section = elf.get_section(symbol["st_shndx"])
            start = symbol["st_value"] - section["sh_addr"]
            found[symbol.name] = section.data()[start : start + symbol["st_size"]]
    return found


def _kernel(entry: dict[str, Any]) -> Kernel:
    return Kernel(
        name=entry[".name"],
        args=tuple(
            KernelArg(a[".offset"], a[".size"], a[".value_kind"]) for a in entry.get(".args", ())
        ),
        kernarg_size=entry[".kernarg_segment_size"],
        wavefront_size=entry[".wavefront_size"],
        max_workgroup_size=entry[".max_flat_workgroup_size"],
    )
