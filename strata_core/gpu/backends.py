"""The GPU backends, one row each: the vendor whose cards it runs, its runtime binding, the
libraries a run tries, and the code its kernel library is built as. Every choice between the
backends reads this table. A row names its modules by path, so that only the chosen
backend's are imported (a CUDA run touches no HIP module)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from .code_object import CodeObject
    from .runtime import GpuRuntime

@attrs.frozen
class GpuBackend:
    """One GPU backend. ``runtime``, ``candidates`` and ``read_code`` are ``module:name``."""

    name: str
    vendor: str
    #: how its cards are counted and named in messages ("HIP 0", "CUDA 1")
    numbering: str
    #: what a message calls its runtime
    runtime_name: str
    #: the GpuRuntime class, built from the candidate libraries
    runtime: str
    #: the libraries a run tries, in order, from the environment
    candidates: str
    #: the suffix of its code objects, and their reader
    code_suffix: str
    read_code: str
    #: the libraries of its prompt GEMMs, whose versions and tables a plan decides on
    blas_libraries: tuple[str, ...]
    #: whether the page's engine packages and pictures are built for it (AMD_HIP.md's
    #: packages are HIP builds)
    packaged: bool
    #: whether a plugin describes each target of its cards (strata_arch_records), where
    #: the target's name says all (an NVIDIA card is its compute capability)
    described_targets: bool
    #: what the `devices` table's family column shows of its cards: the vendor alone (the
    #: target says the rest), or None: each card's family
    family_column: str | None
    #: what a Linux run on cards of two families needs, where it needs more than one of them
    linux_family_split: str | None


BACKENDS = {
    backend.name: backend
    for backend in (
        GpuBackend(
            name="hip",
            vendor="amd",
            numbering="HIP",
            runtime_name="HIP runtime",
            runtime="strata_core.hip.runtime:HipRuntime",
            candidates="strata_core.hip.binding:candidate_paths",
            code_suffix=".hsaco",
            read_code="strata_core.gpu.code_object:read",
            blas_libraries=("hipblaslt", "rocblas"),
            packaged=True,
            described_targets=True,
            family_column=None,
            # AMD_HIP.md, "Install with setup": "Cards of two families (for example gfx1100
            # and gfx1201) need a system ROCm 7, because AMD's wheels hold one family"
            linux_family_split="a system ROCm 7: AMD's wheels hold one family",
        ),
        GpuBackend(
            name="cuda",
            vendor="nvidia",
            numbering="CUDA",
            runtime_name="CUDA driver",
            runtime="strata_core.cuda.driver:CudaDriver",
            candidates="strata_core.cuda.driver:candidate_paths",
            code_suffix=".ptx",
            read_code="strata_core.gpu.ptx:read",
            blas_libraries=("cublaslt",),
            packaged=False,
            described_targets=False,
            family_column="NVIDIA",
            linux_family_split=None,
        ),
    )
}


def _load(where: str) -> Any:
    module, name = where.split(":")
    return getattr(importlib.import_module(module), name)


#: the order in which the backends are tried for a PC's cards: the first with a card a plugin
#: runs is the backend (AMD_HIP.md: "Setup picks --backend hip by itself on a PC with no
#: NVIDIA card Strata can use"); a PC with none counts in the last one's numbers
CHOICE_ORDER = ("cuda", "hip")


def of_vendor(vendor: str) -> GpuBackend | None:
    """The GPU backend that runs a device of ``vendor``; None for the CPU."""
    return next((b for b in BACKENDS.values() if b.vendor == vendor), None)


def backend_for(vendor: str) -> str | None:
    """The name of the GPU backend that runs a device of ``vendor``; None for the CPU."""
    backend = of_vendor(vendor)
    return backend.name if backend else None


def numbering_of(vendor: str) -> str:
    """How a device of ``vendor`` is counted in messages (a CPU as the last backend tried)."""
    backend = of_vendor(vendor) or BACKENDS[CHOICE_ORDER[-1]]
    return backend.numbering


def load_runtime(backend: str, candidates: Sequence[str]) -> GpuRuntime:
    """The runtime of ``backend`` on the first of ``candidates`` that loads."""
    runtime: GpuRuntime = _load(BACKENDS[backend].runtime)(candidates)
    return runtime


def runtime_candidates(backend: str, env: Mapping[str, str]) -> list[str]:
    """The libraries a GPU run of ``backend`` tries, in order; none for the host."""
    if backend not in BACKENDS:
        return []
    paths: list[str] = _load(BACKENDS[backend].candidates)(env)
    return paths


def read_code(path: Path) -> CodeObject:
    """A code object of the backend its suffix names (an AMDGPU ELF otherwise)."""
    backend = next((b for b in BACKENDS.values() if path.suffix == b.code_suffix), None)
    code: CodeObject = _load((backend or BACKENDS["hip"]).read_code)(path)
    return code
