"""What a run reports: the backend that ran, the facts its report starts with (the host
backend's, or a card's), each kernel's report, and the notes said on the way."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from ..gpu.step_graph import StepTimes
from ..host.threads import ThreadChoice
from ..tuning.lookup import TuningDecision
from .workload import KernelReport


@attrs.frozen
class HostFacts:
    """The host backend's run: its kernel library, instruction set and threads, the DRAM read
    bandwidth, the workload and the host BLAS table's decision."""

    library: Path
    isa: str
    threads: int
    read_gbs: float
    workload: str
    tuning: TuningDecision
    thread_choice: ThreadChoice


@attrs.frozen
class GpuFacts:
    """A run on a card: the plugin, the card and the code object that ran on it, the runtime
    (``runtime_name`` and its version), the card's read bandwidth, the workload, the vendor
    GEMM library the child opened (None where none) and the plan's tuning decisions."""

    plugin: str | None
    card: str
    target: str
    code_object: Path
    runtime_name: str
    runtime: str
    read_gbs: float
    workload: str
    gemm_library: Mapping[str, Any] | None
    tuning: Mapping[str, TuningDecision]


@attrs.frozen
class KernelReports:
    """Each kernel's report, and the read bandwidth its share of the read is measured by."""

    reports: Mapping[str, KernelReport]
    read_gbs: float


@attrs.frozen
class StepReport:
    """A decode step on a card: its name, the bytes its calls read, and its launches and
    times as the card's child measured them."""

    name: str
    bytes_read: int
    times: StepTimes

    def share_of_read(self, seconds: float, read_gbs: float) -> float:
        """The step's read rate in ``seconds`` as a share of ``read_gbs``."""
        return self.bytes_read / seconds / 1e9 / read_gbs


@attrs.frozen
class RunOutcome:
    """What ran, the facts a report starts with, its kernels' reports, the decode step
    replayed on a card (None on the host) and the notes said on the way (a card that cannot
    run, the host table's start lines)."""

    backend: str
    facts: HostFacts | GpuFacts
    kernels: KernelReports
    said: tuple[str, ...] = ()
    step: StepReport | None = None
