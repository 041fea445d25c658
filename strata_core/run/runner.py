"""The run: the plan's workload on the backend it names, every result checked. It reads the
Plan and nothing else (no environment, no command line).

On a card the workload runs in a child process (strata_core.run.gpu_child) with the plan's
time limit; a runtime that crashes, aborts or hangs there is one line, and the host backend
then runs the workload, as when there is no GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from .. import log
from ..api.records import KernelChoice
from ..errors import NoGpuRun, StrataError
from ..gpu.backends import BACKENDS
from ..gpu.step_graph import StepTimes
from ..plan.plan import HostRun, Plan, RunSettings
from ..tuning.libraries import PATHS
from .child_process import child_answer
from .gpu_job import RESULTS, GpuJob, unflatten
from .outcome import GpuFacts, HostFacts, KernelReports, RunOutcome, StepReport
from .settings import card_of, runtime_names, settings_of
from .workload import (
    REPLAYED_STEP,
    Progress,
    check,
    execute,
    make_inputs,
    read_bandwidth,
    step_bytes,
    unseen,
    wall_clock,
)

CHILD = "strata_core.run.gpu_child"


def run_workload(plan: Plan, backend: str, progress: Progress = unseen) -> RunOutcome:
    """Run ``plan``'s workload on ``backend`` (``hip``, ``cuda`` or ``host``); each note said
    on the way is logged as it comes and kept in the outcome, and ``progress`` is told each
    phase."""
    said: list[str] = []

    def note(line: str) -> None:
        said.append(line)
        log.info(line, kind="note")

    if backend in BACKENDS:
        try:
            return run_on_gpu(plan, progress)
        except NoGpuRun as why:
            note(f"{why}; the host backend runs the workload")
    return attrs.evolve(run_on_host(plan, note, progress), said=tuple(said))


def _host_library(host: HostRun) -> tuple[Any, int]:
    """The host kernel library with the plan's instruction set, threads and OpenMP wait
    policy, and the threads it runs."""
    from ..host.library import HostLibrary

    lib = HostLibrary(wait_policy=host.threads.wait_policy)
    lib.set_isa(host.isa)
    return lib, lib.set_threads(host.threads.threads or 0)


def run_on_gpu(plan: Plan, progress: Progress = unseen) -> RunOutcome:
    """The workload in a GPU child process, its results checked against the host backend;
    NoGpuRun where the child cannot run it."""
    settings, host = settings_of(plan)
    path = PATHS.get(plan.kernels["prompt_gemm"].variant)
    decision = plan.tuning.get(path.table) if path and path.table else None
    job = GpuJob(
        card_of(plan, settings),
        settings.workload,
        plan.kernels,
        settings.gemm_libraries,
        decision.loaded if decision else None,
        path is not None and plan.verbose(path.library),
    )
    what = f"the GPU run ({BACKENDS[plan.backend].runtime_name} {runtime_names(settings)})"

    def on_the_card(line: str) -> None:
        progress("running the workload on the card", line)

    with child_answer(CHILD, job, settings, what, on_the_card) as (answer, where):
        with np.load(where / RESULTS) as arrays:
            results = unflatten(dict(arrays), answer["seconds"])
    return _check_gpu(plan, settings, host, answer, results, progress)


def _check_gpu(
    plan: Plan,
    settings: RunSettings,
    host: HostRun,
    answer: dict[str, Any],
    results: Any,
    progress: Progress,
) -> RunOutcome:
    from .gpu_backend import HalfGemm

    lib, _ = _host_library(host)
    progress("drawing the workload's inputs for the check")
    inputs = make_inputs(settings.workload)
    progress("checking every result against the host backend")
    code = Path(answer["code_object"])
    reports = check(
        inputs,
        results,
        plan.kernels,
        HostReference(lib, host.kernels),
        HalfGemm(inputs.w),
        "the host backend's result",
        f"the {code.name} code object",
        answer["call_seconds"],
    )
    facts = GpuFacts(
        plan.plugin,
        answer["card"],
        answer["target"],
        code,
        BACKENDS[plan.backend].runtime_name,
        answer["runtime"],
        answer["read_bandwidth_gbs"],
        settings.workload.name,
        answer["gemm"],
        plan.tuning,
    )
    if "differs" in answer["step"]:  # the calls' own results are right: the graph is not
        raise StrataError(f"{answer['step']['differs']}; the graph replay is not to be trusted")
    bytes_read = step_bytes(inputs, results, REPLAYED_STEP)
    step = StepReport(REPLAYED_STEP, bytes_read, StepTimes(**answer["step"]))
    return RunOutcome(plan.backend, facts, KernelReports(reports, facts.read_gbs), step=step)


class HostReference:
    """The host kernel library as the reference of a GPU run, with the host's variants."""

    def __init__(self, lib: Any, choices: Mapping[str, KernelChoice]) -> None:
        self.lib, self.choices = lib, choices

    def expert_matvec_q8_0(self, qs: Any, d: Any, ids: Any, xq: Any, xd: Any) -> np.ndarray:
        y: np.ndarray = self.lib.expert_matvec_q8_0(qs, d, ids, xq, xd)
        return y

    def router_topk(self, logits: Any, k: int) -> Any:
        return self.lib.router_topk(logits, k, self.choices["router_topk"].variant)

    def topk(self, scores: Any, k: int) -> Any:
        return self.lib.topk(scores, k, self.choices["topk"].variant)


def run_on_host(plan: Plan, note: Callable[[str], None], progress: Progress = unseen) -> RunOutcome:
    """The workload on the host kernel library; ``note`` takes the notes said on the way."""
    from ..host import reference
    from ..host.gemm import PromptGemm
    from ..tuning.dispatch import TunedDispatch

    settings, host = settings_of(plan)
    lib, threads = _host_library(host)
    table = host.tuning
    for line in table.log:
        note(line)
    verbose = plan.verbose("hipblaslt")
    dispatch = TunedDispatch(table.loaded, "host BLAS", verbose=verbose)
    progress("drawing the workload's inputs")
    inputs = make_inputs(settings.workload)
    progress("measuring the DRAM read bandwidth")
    read_gbs = read_bandwidth(lib.read_bytes, inputs.largest_weights())
    gemm = PromptGemm(inputs.w)
    results = execute(lib, gemm, wall_clock, inputs, host.kernels, dispatch, progress)
    progress("checking every result against numpy")
    reports = check(
        inputs,
        results,
        host.kernels,
        reference,
        gemm,
        "the numpy reference",
        "the host kernel library",
    )
    if verbose:
        note(dispatch.summary())
    facts = HostFacts(
        lib.path, lib.isa, threads, read_gbs, settings.workload.name, table, host.threads
    )
    return RunOutcome("host", facts, KernelReports(reports, read_gbs))
