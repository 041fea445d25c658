"""One GPU runtime interface with two implementations: the HIP runtime
(strata_core.hip.runtime) and the CUDA driver (strata_core.cuda.driver). The kernel library's
launcher (strata_core.gpu.library.GpuKernels) drives either through these calls."""

from __future__ import annotations

from typing import Any, Protocol

import attrs
import numpy as np


@attrs.frozen
class Card:
    """A device as its runtime reports it: the target its code is built for (gfx1201, sm_90)
    and its wave (warp) size."""

    index: int
    name: str
    gfx: str
    wave_size: int | None


#: what an "extra" launch array says before the argument buffer and before its size
LAUNCH_BUFFER_POINTER, LAUNCH_BUFFER_SIZE = 0x01, 0x02


def launch_extra(ffi: Any, args: bytes, end: int) -> tuple[Any, ...]:
    """The "extra" array of a launch that passes ``args`` as one buffer (the same in HIP and
    CUDA but for the end marker), and the objects it points into, which the caller keeps
    alive until the launch call returns."""
    buffer = ffi.from_buffer("char[]", args)
    size = ffi.new("size_t *", len(args))
    extra = ffi.new(
        "void *[]",
        [
            ffi.cast("void *", LAUNCH_BUFFER_POINTER),
            buffer,
            ffi.cast("void *", LAUNCH_BUFFER_SIZE),
            size,
            ffi.cast("void *", end),
        ],
    )
    return extra, buffer, size


class GpuRuntime(Protocol):
    #: the library that was loaded, as it was named, and the cffi declarations it is called by
    path: str
    ffi: Any

    def device_count(self) -> int: ...
    def card(self, index: int) -> Card: ...
    def set_device(self, index: int) -> None: ...
    def load_module(self, image: bytes, name: str) -> Any: ...
    def unload_module(self, module: Any) -> None: ...
    def function(self, module: Any, name: str) -> Any: ...
    def launch(
        self, function: Any, grid: int, block: int, args: bytes, stream: Any, name: str
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
