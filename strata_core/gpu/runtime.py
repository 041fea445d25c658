"""One GPU runtime interface with two implementations: the HIP runtime
(strata_core.hip.runtime) and the CUDA driver (strata_core.cuda.driver). The kernel library's
launcher (strata_core.gpu.library.GpuKernels) drives either through these calls."""

from __future__ import annotations

from typing import Any, Protocol

import attrs
import numpy as np

from .code_object import CodeObject


@attrs.frozen
class Card:
    """A device as its runtime reports it: the target its code is built for (gfx1201, sm_90)
    and its wave (warp) size."""

    index: int
    name: str
    gfx: str
    wave_size: int | None


class GpuRuntime(Protocol):
    #: the library that was loaded, as it was named, and the cffi declarations it is called by
    path: str
    ffi: Any
    #: what ends a launch's "extra" array in this runtime (HIP_LAUNCH_PARAM_END,
    #: CU_LAUNCH_PARAM_END); strata_core.gpu.library.Launch makes the array
    launch_end: int

    def device_count(self) -> int: ...
    def card(self, index: int) -> Card: ...
    def set_device(self, index: int) -> None: ...
    def load_module(self, image: bytes, name: str) -> Any: ...
    def unload_module(self, module: Any) -> None: ...
    def function(self, module: Any, name: str) -> Any: ...
    def launch(
        self, function: Any, grid: int, block: int, extra: Any, stream: Any, name: str
    ) -> None: ...
    def malloc(self, nbytes: int) -> Any: ...
    def address(self, pointer: Any) -> int: ...
    def free(self, pointer: Any) -> None: ...
    def upload(self, pointer: Any, array: np.ndarray, stream: Any) -> None: ...
    def download(self, array: np.ndarray, pointer: Any, stream: Any) -> None: ...
    def stream(self) -> Any: ...
    def destroy_stream(self, stream: Any) -> None: ...
    def synchronize(self, stream: Any) -> None: ...
    def event(self) -> Any: ...
    def destroy_event(self, event: Any) -> None: ...
    def record(self, event: Any, stream: Any) -> None: ...
    def elapsed_s(self, start: Any, stop: Any) -> float: ...
    def code_refusal(self, code: CodeObject) -> str | None:
        """Why this runtime cannot load ``code`` (a CUDA driver older than its PTX), in one
        line, before any load; None where it can."""
        ...

    #: why the runtime cannot capture a stream's launches as a graph (its library lacks the
    #: calls), or None where it can
    graphs_missing: str | None
    #: why launches cannot overlap the kernel before them (programmatic dependent launch), or
    #: None where they can; ``handover`` makes every launch do so while it is set
    handover_missing: str | None
    handover: bool

    def begin_capture(self, stream: Any) -> None:
        """From now on the launches queued on ``stream`` by this thread are recorded, not run."""
        ...

    def end_capture(self, stream: Any) -> Any:
        """The graph of what was recorded since begin_capture; the stream runs launches again."""
        ...

    def instantiate(self, graph: Any) -> Any:
        """The graph made ready to launch (an executable graph)."""
        ...

    def launch_graph(self, executable: Any, stream: Any) -> None:
        """Queue the graph's launches on ``stream``, in the order they were recorded."""
        ...

    def destroy_graph(self, graph: Any, executable: Any) -> None:
        """Destroy the graph, and its executable where there is one (None: not made)."""
        ...
