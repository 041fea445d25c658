"""The NVIDIA driver (libcuda.so.1) bound through cffi in ABI mode: the declarations of
native/bindings/strata_cuda_driver.h, compiled into _cuda_ffi at install. It implements
strata_core.gpu.runtime.GpuRuntime on the device's primary context."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import StrataError
from ..gpu.code_object import CodeObject
from ..gpu.runtime import Card
from ..library_search import candidates as library_candidates
from ..library_search import lacking_calls, load_first, missing_calls

SONAMES = ("libcuda.so.1",)
CU_LAUNCH_PARAM_END = 0x00
#: the CUDA version from which a graph keeps a launch's programmatic dependency
HANDOVER_IN_GRAPHS = 12030
#: the calls a stream's capture into a graph takes (CUDA 11.4 and later)
GRAPH_CALLS = (
    "cuStreamBeginCapture_v2", "cuStreamEndCapture", "cuGraphInstantiateWithFlags",
    "cuGraphLaunch", "cuGraphExecDestroy", "cuGraphDestroy",
)  # fmt: skip
#: the call that lets a launch overlap the kernel before it (CUDA 12.0 and later)
HANDOVER_CALL = "cuLaunchKernelEx"


class CudaError(StrataError):
    """A driver call that failed, named with the driver's own error name."""


def candidate_paths(env: Mapping[str, str]) -> list[str]:
    """STRATA_CUDA_LIBRARY, else libcuda.so.1 through the loader's search path."""
    return library_candidates(env, "STRATA_CUDA_LIBRARY", SONAMES)


def open_driver(candidates: Sequence[str]) -> tuple[Any, str | None, list[str]]:
    """(lib, path, tried): the first of ``candidates`` that loads, and those that did not;
    lib and path are None when none loads."""
    from ._cuda_ffi import ffi

    return load_first(ffi, candidates)


def compute_target(major: int, minor: int) -> str:
    return f"sm_{major}{minor}"


def device_facts(ffi: Any, lib: Any, ordinal: int) -> dict[str, Any]:
    """What the driver says of one device that a Card holds: name, warp size, target."""
    facts: dict[str, Any] = {}
    device = ffi.new("CUdevice *")
    if lib.cuDeviceGet(device, ordinal) != lib.CUDA_SUCCESS:
        return facts
    text = ffi.new("char[256]")
    if lib.cuDeviceGetName(text, 256, device[0]) == lib.CUDA_SUCCESS:
        facts["name"] = ffi.string(text).decode(errors="replace")
    value = ffi.new("int *")
    found = {}
    for key, attribute in (
        ("warp_size", lib.CU_DEVICE_ATTRIBUTE_WARP_SIZE),
        ("major", lib.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
        ("minor", lib.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
    ):
        if lib.cuDeviceGetAttribute(value, attribute, device[0]) == lib.CUDA_SUCCESS:
            found[key] = value[0]
    if "warp_size" in found:
        facts["warp_size"] = found["warp_size"]
    if "major" in found and "minor" in found:
        facts["target"] = compute_target(found["major"], found["minor"])
    return facts


class CudaDriver:
    """The driver on one device's primary context; every call's failure is a CudaError."""

    launch_end = CU_LAUNCH_PARAM_END

    def __init__(self, candidates: Sequence[str]) -> None:
        from ._cuda_ffi import ffi

        self.ffi = ffi
        lib, path, tried = open_driver(candidates)
        if lib is None or path is None:
            raise StrataError(f"no CUDA driver found (tried {', '.join(tried)})")
        lacking = lacking_calls(lib, ffi, (*GRAPH_CALLS, HANDOVER_CALL))
        if lacking:
            raise StrataError(f"the CUDA driver {path} has {lacking}, which strata needs")
        self.lib, self.path = lib, path
        self.check(lib.cuInit(0), "cuInit")
        self.context: Any = None
        self.device: int | None = None
        self.graphs_missing = missing_calls(lib, ffi, GRAPH_CALLS, path)
        self.handover_missing = missing_calls(lib, ffi, (HANDOVER_CALL,), path) or (
            self._handover_version()
        )
        #: launches overlap the kernel before them (programmatic dependent launch): only
        #: while set, and only for code whose kernels wait for it (grid_handover, sm_90)
        self.handover = False

    def check(self, status: int, call: str) -> None:
        if status != self.lib.CUDA_SUCCESS:
            name = self.ffi.new("const char **")
            known = self.lib.cuGetErrorName(status, name) == self.lib.CUDA_SUCCESS
            text = self.ffi.string(name[0]).decode() if known and name[0] else "unknown"
            raise CudaError(f"{call} failed: {text} ({status}) in {self.path}")

    def _handover_version(self) -> str | None:
        """Why this driver keeps no overlap of launches in a graph (before CUDA 12.3, a
        captured launch's programmatic dependency is not a graph edge), or None."""
        if self.version() >= HANDOVER_IN_GRAPHS:
            return None
        return f"the CUDA driver {self.path} is older than CUDA 12.3, whose graphs keep it"

    def version(self) -> int:
        """The CUDA version the driver implements (12020 is CUDA 12.2)."""
        version = self.ffi.new("int *")
        self.check(self.lib.cuDriverGetVersion(version), "cuDriverGetVersion")
        return int(version[0])

    def code_refusal(self, code: CodeObject) -> str | None:
        from ..gpu.ptx import driver_refusal

        return driver_refusal(code, self.version(), self.path)

    def device_count(self) -> int:
        count = self.ffi.new("int *")
        status = self.lib.cuDeviceGetCount(count)
        if status == self.lib.CUDA_ERROR_NO_DEVICE:
            return 0
        self.check(status, "cuDeviceGetCount")
        return int(count[0])

    def card(self, index: int) -> Card:
        facts = device_facts(self.ffi, self.lib, index)
        return Card(
            index,
            facts.get("name") or f"CUDA device {index}",
            facts.get("target", ""),
            facts.get("warp_size"),
        )

    def set_device(self, index: int) -> None:
        device = self.ffi.new("CUdevice *")
        self.check(self.lib.cuDeviceGet(device, index), f"cuDeviceGet({index})")
        context = self.ffi.new("CUcontext *")
        self.check(
            self.lib.cuDevicePrimaryCtxRetain(context, device[0]), "cuDevicePrimaryCtxRetain"
        )
        self.check(self.lib.cuCtxSetCurrent(context[0]), "cuCtxSetCurrent")
        self.context, self.device = context[0], device[0]

    def load_module(self, image: bytes, name: str) -> Any:
        module = self.ffi.new("CUmodule *")
        text = self.ffi.new("char[]", image)  # PTX is text: the driver reads up to the NUL
        self.check(self.lib.cuModuleLoadData(module, text), f"cuModuleLoadData({name})")
        return module[0]

    def unload_module(self, module: Any) -> None:
        self.check(self.lib.cuModuleUnload(module), "cuModuleUnload")

    def function(self, module: Any, name: str) -> Any:
        function = self.ffi.new("CUfunction *")
        self.check(
            self.lib.cuModuleGetFunction(function, module, name.encode()),
            f"cuModuleGetFunction({name})",
        )
        return function[0]

    def launch(
        self, function: Any, grid: int, block: int, extra: Any, stream: Any, name: str
    ) -> None:
        """Launch with the argument buffer packed by strata_core.gpu.abi, passed in ``extra``
        (strata_core.gpu.library.Launch)."""
        if self.handover:
            status = self._launch_handing_over(function, grid, block, extra, stream)
            self.check(status, f"cuLaunchKernelEx({name})")
            return
        status = self.lib.cuLaunchKernel(
            function, grid, 1, 1, block, 1, 1, 0, stream, self.ffi.NULL, extra
        )
        self.check(status, f"cuLaunchKernel({name})")

    def _launch_handing_over(
        self, function: Any, grid: int, block: int, extra: Any, stream: Any
    ) -> int:
        """cuLaunchKernelEx with programmatic stream serialization allowed: the kernel's
        workgroups may start while the one before it ends."""
        attribute = self.ffi.new("CUlaunchAttribute *")
        attribute.id = self.lib.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attribute.value.programmaticStreamSerializationAllowed = 1
        config = self.ffi.new(
            "CUlaunchConfig *",
            {"gridDimX": grid, "gridDimY": 1, "gridDimZ": 1, "blockDimX": block,
             "blockDimY": 1, "blockDimZ": 1, "sharedMemBytes": 0, "hStream": stream,
             "attrs": attribute, "numAttrs": 1},
        )  # fmt: skip
        return int(self.lib.cuLaunchKernelEx(config, function, self.ffi.NULL, extra))

    def malloc(self, nbytes: int) -> Any:
        pointer = self.ffi.new("CUdeviceptr *")
        self.check(self.lib.cuMemAlloc_v2(pointer, max(nbytes, 1)), f"cuMemAlloc({nbytes})")
        return pointer[0]

    def address(self, pointer: Any) -> int:
        return int(pointer)

    def free(self, pointer: Any) -> None:
        self.check(self.lib.cuMemFree_v2(pointer), "cuMemFree")

    def upload(self, pointer: Any, array: np.ndarray, stream: Any) -> None:
        source = self.ffi.from_buffer("char[]", array)
        self.check(
            self.lib.cuMemcpyHtoDAsync_v2(pointer, source, array.nbytes, stream),
            "cuMemcpyHtoDAsync",
        )

    def download(self, array: np.ndarray, pointer: Any, stream: Any) -> None:
        target = self.ffi.from_buffer("char[]", array)
        self.check(
            self.lib.cuMemcpyDtoHAsync_v2(target, pointer, array.nbytes, stream),
            "cuMemcpyDtoHAsync",
        )

    def stream(self) -> Any:
        stream = self.ffi.new("CUstream *")
        self.check(self.lib.cuStreamCreate(stream, 0), "cuStreamCreate")
        return stream[0]

    def destroy_stream(self, stream: Any) -> None:
        self.check(self.lib.cuStreamDestroy_v2(stream), "cuStreamDestroy")

    def synchronize(self, stream: Any) -> None:
        self.check(self.lib.cuStreamSynchronize(stream), "cuStreamSynchronize")

    def event(self) -> Any:
        event = self.ffi.new("CUevent *")
        self.check(self.lib.cuEventCreate(event, 0), "cuEventCreate")
        return event[0]

    def destroy_event(self, event: Any) -> None:
        self.check(self.lib.cuEventDestroy_v2(event), "cuEventDestroy")

    def record(self, event: Any, stream: Any) -> None:
        self.check(self.lib.cuEventRecord(event, stream), "cuEventRecord")

    def elapsed_s(self, start: Any, stop: Any) -> float:
        ms = self.ffi.new("float *")
        self.check(self.lib.cuEventElapsedTime(ms, start, stop), "cuEventElapsedTime")
        return float(ms[0]) / 1e3

    def begin_capture(self, stream: Any) -> None:
        self.check(
            self.lib.cuStreamBeginCapture_v2(stream, self.lib.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            "cuStreamBeginCapture",
        )

    def end_capture(self, stream: Any) -> Any:
        graph = self.ffi.new("CUgraph *")
        self.check(self.lib.cuStreamEndCapture(stream, graph), "cuStreamEndCapture")
        return graph[0]

    def instantiate(self, graph: Any) -> Any:
        executable = self.ffi.new("CUgraphExec *")
        self.check(
            self.lib.cuGraphInstantiateWithFlags(executable, graph, 0), "cuGraphInstantiate"
        )
        return executable[0]

    def launch_graph(self, executable: Any, stream: Any) -> None:
        self.check(self.lib.cuGraphLaunch(executable, stream), "cuGraphLaunch")

    def destroy_graph(self, graph: Any, executable: Any) -> None:
        if executable is not None:
            self.check(self.lib.cuGraphExecDestroy(executable), "cuGraphExecDestroy")
        self.check(self.lib.cuGraphDestroy(graph), "cuGraphDestroy")
