"""The GPU backend of `strata-core run`, as the child process runs it: the card's runtime (the
HIP runtime or the CUDA driver), the start check, and the plugin's code object for the card."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from ..api.records import KernelLibrary
from ..blas.gemm import BlasGemm, GemmShape
from ..blas.open import open_blas
from ..errors import NoGpuRun, StrataError
from ..gpu.backends import BACKENDS, load_runtime
from ..gpu.library import GpuKernels, OnCard, start_check
from ..gpu.runtime import Card
from ..tuning.libraries import PATHS
from ..tuning.tables import DEFAULT


class HalfGemm:
    """The prompt GEMM's reference on a GPU: the product of the same half values."""

    tolerance = 2e-3

    def __init__(self, w: np.ndarray) -> None:
        self.wt = np.ascontiguousarray(w.T, dtype=np.float16)

    def expected(self, x: np.ndarray) -> np.ndarray:
        return x.astype(np.float16).astype(np.float32) @ self.wt.astype(np.float32).T


class KernelGemm(HalfGemm):
    """The prompt GEMM on the kernel library's own GEMM (STRATA_PF_GEMM's stand-in), over one
    weight matrix kept on the card as half N x K. It has one solution and takes no table."""

    def __init__(self, gpu: GpuKernels, w: np.ndarray) -> None:
        super().__init__(w)
        self.gpu, self.on_card = gpu, gpu.keep(self.wt)

    def table_key(self, tokens: int) -> tuple[Any, ...]:
        return (tokens, *self.wt.shape)

    def __call__(self, x: np.ndarray, solution: str = DEFAULT) -> np.ndarray:
        return self.gpu.prompt_gemm(x.astype(np.float16), self.on_card)

    def close(self) -> None:
        pass


class BlasPromptGemm(HalfGemm):
    """The prompt GEMM through a vendor library on the card, timed like the kernels."""

    def __init__(self, gpu: GpuKernels, blas: BlasGemm, w: np.ndarray) -> None:
        super().__init__(w)
        self.gpu, self.blas = gpu, blas
        self.weights = gpu.keep(self.wt if blas.dtype == "f16" else self.wt.astype(np.float32))
        self.warm: set[tuple[GemmShape, str]] = set()

    def shape(self, tokens: int) -> GemmShape:
        n, k = self.wt.shape
        return GemmShape(tokens, n, k)

    def table_key(self, tokens: int) -> tuple[Any, ...]:
        shape = self.shape(tokens)
        return self.blas.kind.key_for(tokens, shape.n, shape.k, self.blas.dtype, "prompt")

    def __call__(self, x: np.ndarray, solution: str = DEFAULT) -> np.ndarray:
        """The product; the first call of a shape and solution runs twice, so that the time
        is the GEMM's and not the library loading its kernel."""
        shape = self.shape(x.shape[0])
        y = np.empty((shape.tokens, shape.n), dtype=np.float32)
        stream = self.gpu.stream_address

        def launch_at(at: dict[str, int]) -> Callable[[], None]:
            return self.blas.launcher(shape, solution, at["x"], at["w"], at["y"], stream)

        x_as_w = x.astype(self.weights.dtype)
        inputs: dict[str, np.ndarray | OnCard] = {"x": x_as_w, "w": self.weights}
        for _ in range(1 if (shape, solution) in self.warm else 2):
            self.gpu.run_timed(launch_at, inputs, {"y": y})
        self.warm.add((shape, solution))
        return y

    def close(self) -> None:
        self.blas.close()


def prompt_gemm(
    gpu: GpuKernels, path: str, files: Sequence[str], w: np.ndarray
) -> KernelGemm | BlasPromptGemm:
    """The prompt GEMM of the plan's path: through its vendor library, loaded from ``files``,
    or on the kernel library's own GEMM where the path is that (wmma)."""
    if path not in PATHS:
        return KernelGemm(gpu, w)
    return BlasPromptGemm(gpu, open_blas(path, files, gpu.runtime), w)


@attrs.frozen
class OpenedGpu:
    kernels: GpuKernels
    card: Card
    runtime_path: str


@attrs.frozen
class GpuCard:
    """The card a child process opens, as the plan names it: the backend (``hip`` or
    ``cuda``), the plugin, its kernel library, the card's number and the runtimes to try."""

    backend: str
    plugin: str
    library: KernelLibrary | None
    index: int | None
    runtimes: tuple[str, ...]


def open_gpu(card: GpuCard, hold_bytes: int = 0) -> OpenedGpu:
    """Load the first of the card's runtimes that loads (its backend's runtime) and the code
    object for its device (timed behind a read of ``hold_bytes``: GpuKernels). NoGpuRun when
    this PC cannot run it (no code objects, no runtime, no device); StrataError when the
    start check refuses."""
    backend, plugin, library, index = card.backend, card.plugin, card.library, card.index
    if library is None or not library.code_objects:
        why = library.problems[0] if library and library.problems else "no code objects"
        raise NoGpuRun(f"{plugin} carries no code objects ({why})")
    try:
        runtime = load_runtime(backend, card.runtimes)
    except StrataError as exc:
        raise NoGpuRun(str(exc)) from None
    what = f"the {BACKENDS[backend].runtime_name} {runtime.path}"
    count = runtime.device_count()
    if count == 0:
        raise NoGpuRun(f"{what} reports no device")
    if index is None or index >= count:
        raise NoGpuRun(f"{what} reports {count} device(s), none at index {index}")
    gpu = runtime.card(index)
    code = start_check(plugin, library, gpu)
    refusal = runtime.code_refusal(code)
    if refusal:
        raise StrataError(refusal)
    return OpenedGpu(GpuKernels(runtime, code, gpu, hold_bytes=hold_bytes), gpu, runtime.path)
