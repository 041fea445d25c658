"""The user's HIP runtime (libamdhip64.so.7, .6 or .5) bound through cffi in ABI mode: the
declarations of native/bindings/strata_hip_runtime.h, compiled into _hip_ffi at install."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import StrataError
from ..gpu.code_object import CodeObject
from ..gpu.runtime import Card
from ..library_search import lacking_calls, missing_calls
from .binding import (
    GCN_ARCH_NAME_OFFSETS,
    HIP_ERROR_NO_DEVICE,
    HIP_SUCCESS,
    device_facts,
    open_runtime,
)

HIP_LAUNCH_PARAM_END = 0x03
#: the calls a stream's capture into a graph takes
GRAPH_CALLS = (
    "hipStreamBeginCapture", "hipStreamEndCapture", "hipGraphInstantiate", "hipGraphLaunch",
    "hipGraphExecDestroy", "hipGraphDestroy",
)  # fmt: skip


class HipError(StrataError):
    """A HIP call that failed, named with the runtime's own error name."""


class HipRuntime:
    launch_end = HIP_LAUNCH_PARAM_END

    def __init__(self, candidates: Sequence[str]) -> None:
        """Load the first of ``candidates`` (library names or paths) that loads."""
        from ._hip_ffi import ffi

        self.ffi = ffi
        lib, path, tried = open_runtime(candidates)
        if lib is None or path is None:
            raise StrataError(f"no HIP runtime found (tried {', '.join(tried)})")
        properties = tuple(symbol for symbol, _ in GCN_ARCH_NAME_OFFSETS)
        lacking = lacking_calls(lib, ffi, (*GRAPH_CALLS, *properties))
        if lacking:
            raise StrataError(f"the HIP runtime {path} has {lacking}, which strata needs")
        self.lib, self.path = lib, path
        self.graphs_missing = missing_calls(lib, self.ffi, GRAPH_CALLS, path)
        self.handover_missing: str | None = "HIP has no programmatic dependent launch"
        self.handover = False

    def check(self, status: int, call: str) -> None:
        if status != HIP_SUCCESS:
            name = self.ffi.string(self.lib.hipGetErrorName(status)).decode(errors="replace")
            raise HipError(f"{call} failed: {name} ({status}) in {self.path}")

    def code_refusal(self, code: CodeObject) -> None:
        """None: the HIP runtime loads any code object built for the card's target."""
        return None

    def device_count(self) -> int:
        count = self.ffi.new("int *")
        status = self.lib.hipGetDeviceCount(count)
        if status == HIP_ERROR_NO_DEVICE:
            return 0
        self.check(status, "hipGetDeviceCount")
        return int(count[0])

    def card(self, index: int) -> Card:
        facts = device_facts(self.ffi, self.lib, index)
        return Card(
            index,
            facts.get("name") or f"HIP device {index}",
            (facts.get("gcn_arch_name") or "").split(":", 1)[0],
            facts.get("warp_size"),
        )

    def set_device(self, index: int) -> None:
        self.check(self.lib.hipSetDevice(index), f"hipSetDevice({index})")

    def load_module(self, image: bytes, name: str) -> Any:
        module = self.ffi.new("hipModule_t *")
        self.check(self.lib.hipModuleLoadData(module, image), f"hipModuleLoadData({name})")
        return module[0]

    def unload_module(self, module: Any) -> None:
        self.check(self.lib.hipModuleUnload(module), "hipModuleUnload")

    def function(self, module: Any, name: str) -> Any:
        function = self.ffi.new("hipFunction_t *")
        self.check(
            self.lib.hipModuleGetFunction(function, module, name.encode()),
            f"hipModuleGetFunction({name})",
        )
        return function[0]

    def launch(
        self, function: Any, grid: int, block: int, extra: Any, stream: Any, name: str
    ) -> None:
        """Launch with the argument buffer packed by strata_core.gpu.abi, passed in ``extra``
        (strata_core.gpu.library.Launch)."""
        status = self.lib.hipModuleLaunchKernel(
            function, grid, 1, 1, block, 1, 1, 0, stream, self.ffi.NULL, extra
        )
        self.check(status, f"hipModuleLaunchKernel({name})")

    def malloc(self, nbytes: int) -> Any:
        pointer = self.ffi.new("void **")
        self.check(self.lib.hipMalloc(pointer, max(nbytes, 1)), f"hipMalloc({nbytes})")
        return pointer[0]

    def address(self, pointer: Any) -> int:
        return int(self.ffi.cast("uintptr_t", pointer))

    def free(self, pointer: Any) -> None:
        self.check(self.lib.hipFree(pointer), "hipFree")

    def upload(self, pointer: Any, array: np.ndarray, stream: Any) -> None:
        source = self.ffi.from_buffer("char[]", array)
        self.check(
            self.lib.hipMemcpyHtoDAsync(pointer, source, array.nbytes, stream),
            "hipMemcpyHtoDAsync",
        )

    def download(self, array: np.ndarray, pointer: Any, stream: Any) -> None:
        target = self.ffi.from_buffer("char[]", array)
        self.check(
            self.lib.hipMemcpyDtoHAsync(target, pointer, array.nbytes, stream),
            "hipMemcpyDtoHAsync",
        )

    def stream(self) -> Any:
        stream = self.ffi.new("hipStream_t *")
        self.check(self.lib.hipStreamCreate(stream), "hipStreamCreate")
        return stream[0]

    def destroy_stream(self, stream: Any) -> None:
        self.check(self.lib.hipStreamDestroy(stream), "hipStreamDestroy")

    def synchronize(self, stream: Any) -> None:
        self.check(self.lib.hipStreamSynchronize(stream), "hipStreamSynchronize")

    def event(self) -> Any:
        event = self.ffi.new("hipEvent_t *")
        self.check(self.lib.hipEventCreate(event), "hipEventCreate")
        return event[0]

    def destroy_event(self, event: Any) -> None:
        self.check(self.lib.hipEventDestroy(event), "hipEventDestroy")

    def record(self, event: Any, stream: Any) -> None:
        self.check(self.lib.hipEventRecord(event, stream), "hipEventRecord")

    def elapsed_s(self, start: Any, stop: Any) -> float:
        ms = self.ffi.new("float *")
        self.check(self.lib.hipEventElapsedTime(ms, start, stop), "hipEventElapsedTime")
        return float(ms[0]) / 1e3

    def begin_capture(self, stream: Any) -> None:
        self.check(
            self.lib.hipStreamBeginCapture(stream, self.lib.hipStreamCaptureModeThreadLocal),
            "hipStreamBeginCapture",
        )

    def end_capture(self, stream: Any) -> Any:
        graph = self.ffi.new("hipGraph_t *")
        self.check(self.lib.hipStreamEndCapture(stream, graph), "hipStreamEndCapture")
        return graph[0]

    def instantiate(self, graph: Any) -> Any:
        executable = self.ffi.new("hipGraphExec_t *")
        status = self.lib.hipGraphInstantiate(executable, graph, self.ffi.NULL, self.ffi.NULL, 0)
        self.check(status, "hipGraphInstantiate")
        return executable[0]

    def launch_graph(self, executable: Any, stream: Any) -> None:
        self.check(self.lib.hipGraphLaunch(executable, stream), "hipGraphLaunch")

    def destroy_graph(self, graph: Any, executable: Any) -> None:
        if executable is not None:
            self.check(self.lib.hipGraphExecDestroy(executable), "hipGraphExecDestroy")
        self.check(self.lib.hipGraphDestroy(graph), "hipGraphDestroy")
