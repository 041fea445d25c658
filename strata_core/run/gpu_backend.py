"""The GPU backend of `strata-core run`, as the child process runs it: the card's runtime (the
HIP runtime or the CUDA driver), the start check, and the plugin's code object for the card."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from ..errors import NoGpuRun, StrataError
from ..gpu_runtime import Card, GpuRuntime
from ..hip.library import GpuKernels, start_check
from ..records import KernelLibrary

#: the runtime each backend loads, and what a message calls it
RUNTIME_NAMES = {"hip": "HIP runtime", "cuda": "CUDA driver"}


def load_runtime(backend: str, candidates: Sequence[str]) -> GpuRuntime:
    if backend == "cuda":
        from ..cuda.driver import CudaDriver

        return CudaDriver(candidates)
    from ..hip.runtime import HipRuntime

    return HipRuntime(candidates)


class HalfGemm:
    """The prompt GEMM's reference on a GPU: the product of the same half values."""

    tolerance = 2e-3

    def __init__(self, w: np.ndarray) -> None:
        self.wt = np.ascontiguousarray(w.T, dtype=np.float16)

    def expected(self, x: np.ndarray) -> np.ndarray:
        return x.astype(np.float16).astype(np.float32) @ self.wt.astype(np.float32).T


class GpuGemm(HalfGemm):
    """The prompt GEMM on the GPU over one weight matrix, kept as half N x K."""

    def __init__(self, gpu: GpuKernels, w: np.ndarray) -> None:
        super().__init__(w)
        self.gpu = gpu

    def __call__(self, x: np.ndarray, solution: str = "default") -> np.ndarray:
        return self.gpu.prompt_gemm(x.astype(np.float16), self.wt)


@attrs.frozen
class OpenedGpu:
    kernels: GpuKernels
    card: Card
    runtime_path: str


def open_gpu(
    backend: str,
    plugin: str,
    library: KernelLibrary | None,
    index: int | None,
    runtimes: Sequence[str],
) -> OpenedGpu:
    """Load the first of ``runtimes`` that loads (the ``backend``'s runtime) and the code
    object for its device ``index``. NoGpuRun when this PC cannot run it (no code objects, no
    runtime, no device); StrataError when the start check refuses."""
    if library is None or not library.code_objects:
        why = library.problems[0] if library and library.problems else "no code objects"
        raise NoGpuRun(f"{plugin} carries no code objects ({why})")
    try:
        runtime = load_runtime(backend, runtimes)
    except StrataError as exc:
        raise NoGpuRun(str(exc)) from None
    what = f"the {RUNTIME_NAMES[backend]} {runtime.path}"
    count = runtime.device_count()
    if count == 0:
        raise NoGpuRun(f"{what} reports no device")
    if index is None or index >= count:
        raise NoGpuRun(f"{what} reports {count} device(s), none at index {index}")
    gpu = runtime.card(index)
    code = start_check(plugin, library, gpu)
    return OpenedGpu(GpuKernels(runtime, code, gpu), gpu, runtime.path)
