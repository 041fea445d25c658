"""The GPU backend of `strata-core run`: the plugin's code object for the card, opened after
the start check, with every result checked against the host backend."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import attrs
import numpy as np

from ..errors import StrataError
from ..host.library import HostLibrary
from ..host.workload import Backend
from ..records import Device, KernelLibrary
from .library import Card, GpuKernels, card, start_check
from .runtime import HipRuntime


class NoGpuRun(Exception):
    """The GPU cannot run the workload here; the message says why in one line."""


class GpuGemm:
    """The prompt GEMM on the GPU over one weight matrix, kept as half N x K."""

    #: half inputs: relative tolerance against the product of the same half values
    tolerance = 2e-3

    def __init__(self, gpu: GpuKernels, w: np.ndarray) -> None:
        self.gpu = gpu
        self.wt = np.ascontiguousarray(w.T, dtype=np.float16)

    def expected(self, x: np.ndarray) -> np.ndarray:
        return x.astype(np.float16).astype(np.float32) @ self.wt.astype(np.float32).T

    def __call__(self, x: np.ndarray, solution: str = "default") -> np.ndarray:
        return self.gpu.prompt_gemm(x.astype(np.float16), self.wt)


@attrs.frozen
class OpenedGpu:
    kernels: GpuKernels
    card: Card
    runtime_path: str


def open_gpu(
    plugin: str, library: KernelLibrary | None, device: Device, env: Mapping[str, str]
) -> OpenedGpu:
    """Load the runtime and the code object for ``device``. NoGpuRun when this PC cannot run
    it (no code objects, no runtime, no device); StrataError when the start check refuses."""
    if library is None or not library.code_objects:
        why = library.problems[0] if library and library.problems else "no code objects"
        raise NoGpuRun(f"{plugin} carries no code objects ({why})")
    try:
        runtime = HipRuntime(env)
    except StrataError as exc:
        raise NoGpuRun(str(exc)) from None
    count = runtime.device_count()
    if count == 0:
        raise NoGpuRun(f"the HIP runtime {runtime.path} reports no device")
    if device.index is None or device.index >= count:
        raise NoGpuRun(
            f"the HIP runtime {runtime.path} reports {count} device(s), none at index "
            f"{device.index}"
        )
    gpu = card(runtime, device.index)
    code = start_check(plugin, library, gpu)
    return OpenedGpu(GpuKernels(runtime, code, gpu), gpu, runtime.path)


def gpu_backend(gpu: GpuKernels, host: HostLibrary) -> Backend:
    return Backend(
        gpu,
        partial(GpuGemm, gpu),
        lambda call: (call(), gpu.seconds),
        host,
        "the host backend's result",
        f"the {gpu.code.path.name} code object",
    )
