"""A decode step on the card as an engine runs it: every launch of the step, in order, on
buffers kept on the card, queued back to back and replayed as one graph (a CUDA graph through
the driver, a hipGraph through the HIP runtime: the same calls of strata_core.gpu.runtime).
GpuKernels.recording makes a RecordedStep of the operations called in its body; time_step
times it both ways."""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import attrs
import numpy as np

from .. import archdb
from ..errors import StrataError
from .code_object import CodeObject
from .runtime import GpuRuntime


class StepLauncher(Protocol):
    """What a step is recorded and timed on: strata_core.gpu.library.GpuKernels."""

    runtime: GpuRuntime
    code: CodeObject
    stream: Any

    def launch_timed(
        self, launches: Sequence[Callable[[], None]], downloads: list[tuple[np.ndarray, Any]]
    ) -> float:
        """Queue ``launches`` between two events; the seconds between them."""
        ...


#: timed runs of a step each way (medians)
STEP_REPEATS = 20


class ReplayDiffers(StrataError):
    """A graph's replay left another output than the step's calls gave."""


class RecordedStep:
    """The launches of a step and the buffers they read and write, kept on the card until
    ``close``. Each operation runs once as it is recorded (``add``), so that its results are
    there for the next (the router's ids for the expert step) and for the check; an output
    handed to a later operation is read where it lies on the card."""

    def __init__(self, kernels: StepLauncher) -> None:
        self.kernels = kernels
        self.launches: list[Callable[[], None]] = []
        self.outputs: list[tuple[np.ndarray, Any]] = []
        self._held: list[Any] = []

    def take(self, nbytes: int) -> Any:
        """A device buffer held by the step."""
        self._held.append(self.kernels.runtime.malloc(nbytes))
        return self._held[-1]

    def on_card(self, array: Any) -> Any | None:
        """The device buffer an earlier operation of the step wrote ``array`` from, or None."""
        return next((pointer for out, pointer in self.outputs if out is array), None)

    def add(
        self, launches: Sequence[Callable[[], None]], downloads: list[tuple[np.ndarray, Any]]
    ) -> float:
        """Run an operation's ``launches`` once, download its outputs, and keep both."""
        rt, stream = self.kernels.runtime, self.kernels.stream
        for launch in launches:
            launch()
        for array, pointer in downloads:
            rt.download(array, pointer, stream)
        rt.synchronize(stream)
        self.launches += launches
        self.outputs += downloads
        return 0.0

    def outputs_again(self, run: Callable[[], None]) -> bool:
        """Whether ``run`` (the step's launches, or its graph) writes every output anew as its
        operation gave it when recorded: each output on the card is first filled with 0xFF
        bytes, which no operation gives (a NaN, or ids and counts of -1)."""
        rt, stream = self.kernels.runtime, self.kernels.stream
        for array, pointer in self.outputs:
            rt.upload(pointer, np.full(array.nbytes, 0xFF, np.uint8), stream)
        run()
        copies = [(np.empty_like(array), array, pointer) for array, pointer in self.outputs]
        for copy, _, pointer in copies:
            rt.download(copy, pointer, stream)
        rt.synchronize(stream)
        return all(np.array_equal(copy, array) for copy, array, _ in copies)

    def close(self) -> None:
        for pointer in self._held:
            self.kernels.runtime.free(pointer)
        self._held.clear()


#: the compute capability from which the kernels wait for the kernel before them
#: (grid_handover in native/gpu/cuda_primitives.h), so that a launch may overlap it
HANDOVER_CAPABILITY = 90


@attrs.frozen
class StepTimes:
    """A step's launches and its GPU time queued launch by launch, replayed as a graph (None
    where the runtime has none: ``graph_missing`` says why) and replayed as a graph whose
    launches each overlap the one before (None where the card or runtime cannot:
    ``handover_missing``)."""

    launches: int
    queued_s: float
    graph_s: float | None
    graph_missing: str | None
    handover_s: float | None = None
    handover_missing: str | None = None


def time_step(step: RecordedStep, repeats: int = STEP_REPEATS) -> StepTimes:
    """The step timed as queued launches, then as a graph captured from those launches and
    replayed, then as a graph of launches that overlap the one before; each the median of
    ``repeats`` runs between events, behind the kernels' hold. A runtime that cannot make a
    graph (it lacks the calls, or refuses the capture) leaves it out and says why; a graph
    that fails as it runs, or whose replay leaves other outputs than the step's calls gave,
    stops the run."""
    kernels, rt = step.kernels, step.kernels.runtime
    queued = statistics.median(kernels.launch_timed(step.launches, []) for _ in range(repeats))
    launches = len(step.launches)
    graph, missing = _graph(step)
    if graph is None:
        return StepTimes(launches, queued, None, missing, None, missing)
    replayed = _replayed(step, graph, repeats, "graph")
    handover_missing = _handover_missing(kernels)
    if handover_missing is not None:
        return StepTimes(launches, queued, replayed, None, None, handover_missing)
    rt.handover = True
    try:
        graph, handover_missing = _graph(step)
    finally:
        rt.handover = False
    if graph is None:
        return StepTimes(launches, queued, replayed, None, None, handover_missing)
    handed = _replayed(step, graph, repeats, "graph of overlapping launches")
    return StepTimes(launches, queued, replayed, None, handed, None)


def _handover_missing(kernels: StepLauncher) -> str | None:
    """Why the step's launches cannot overlap the kernel before them, or None."""
    target = kernels.code.target
    capability = archdb.compute_capability(target) or 0
    if kernels.runtime.handover_missing is None and capability < HANDOVER_CAPABILITY:
        return f"the {target} code's kernels do not wait for the one before (sm_90 and newer)"
    return kernels.runtime.handover_missing


def _graph(step: RecordedStep) -> tuple[tuple[Any, Any] | None, str | None]:
    """The step's launches captured from the kernels' stream and made ready to launch (the
    graph and its executable), or None and why the runtime could not."""
    kernels, rt = step.kernels, step.kernels.runtime
    if rt.graphs_missing is not None:
        return None, rt.graphs_missing
    try:
        graph = _capture(kernels, step.launches)
    except StrataError as refused:
        return None, str(refused)
    try:
        return (graph, rt.instantiate(graph)), None
    except StrataError as refused:
        rt.destroy_graph(graph, None)
        return None, str(refused)


def _replayed(step: RecordedStep, made: tuple[Any, Any], repeats: int, what: str) -> float:
    """The seconds of the made graph's replay; its replay must write every output as the
    calls gave it. The graph is destroyed after."""
    kernels, rt = step.kernels, step.kernels.runtime
    graph, executable = made
    try:
        replay = [lambda: rt.launch_graph(executable, kernels.stream)]
        seconds = statistics.median(kernels.launch_timed(replay, []) for _ in range(repeats))
        if not step.outputs_again(replay[0]):
            raise ReplayDiffers(
                f"the decode step replayed as a {what} gave other results than its calls"
            )
    finally:
        rt.destroy_graph(graph, executable)
    return seconds


def _capture(kernels: StepLauncher, launches: Sequence[Callable[[], None]]) -> Any:
    """The graph of ``launches`` captured from the kernels' stream. Where a launch fails in
    it (or anything stops it), the capture is ended, what it made destroyed, and the first
    failure raised."""
    rt, stream = kernels.runtime, kernels.stream
    rt.begin_capture(stream)
    try:
        for launch in launches:
            launch()
    except BaseException:
        with contextlib.suppress(StrataError):
            made = rt.end_capture(stream)
            if made:
                rt.destroy_graph(made, None)
        raise
    return rt.end_capture(stream)
