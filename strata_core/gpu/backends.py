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
    #: what a message calls its runtime
    runtime_name: str
    #: the GpuRuntime class, built from the candidate libraries
    runtime: str
    #: the libraries a run tries, in order, from the environment
    candidates: str
    #: the suffix of its code objects, and their reader
    code_suffix: str
    read_code: str


BACKENDS = {
    backend.name: backend
    for backend in (
        GpuBackend(
            name="hip",
            vendor="amd",
            runtime_name="HIP runtime",
            runtime="strata_core.hip.runtime:HipRuntime",
            candidates="strata_core.hip.binding:candidate_paths",
            code_suffix=".hsaco",
            read_code="strata_core.gpu.code_object:read",
        ),
        GpuBackend(
            name="cuda",
            vendor="nvidia",
            runtime_name="CUDA driver",
            runtime="strata_core.cuda.driver:CudaDriver",
            candidates="strata_core.cuda.driver:candidate_paths",
            code_suffix=".ptx",
            read_code="strata_core.gpu.ptx:read",
        ),
    )
}


def _load(where: str) -> Any:
    module, name = where.split(":")
    return getattr(importlib.import_module(module), name)


def backend_for(vendor: str) -> str | None:
    """The GPU backend that runs a device of ``vendor`` (AMD_HIP.md: "Setup picks --backend
    hip by itself on a PC with no NVIDIA card Strata can use"); None for the CPU."""
    return next((b.name for b in BACKENDS.values() if b.vendor == vendor), None)


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
