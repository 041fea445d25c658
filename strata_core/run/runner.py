"""The run: the plan's workload on the backend it names, every result checked. It reads the
Plan and nothing else (no environment, no command line).

On a card the workload runs in a child process (strata_core.run.gpu_child) with the plan's
time limit; a runtime that crashes, aborts or hangs there is one line, and the host backend
then runs the workload, as when there is no GPU.
"""

from __future__ import annotations

import contextlib
import json
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from .. import log
from ..api.records import KernelChoice
from ..errors import NoGpuRun, StrataError
from ..gpu.backends import BACKENDS
from ..host.threads import ThreadChoice
from ..plan.plan import HostRun, Plan, RunSettings
from ..tuning.dispatch import say
from ..tuning.libraries import PATHS
from ..tuning.lookup import TuningDecision
from .gpu_backend import GpuCard
from .gpu_child import ANSWER, CONTACT, JOB, RESULTS, GpuJob, unflatten
from .held_signals import HeldSignals
from .workload import (
    KernelReport,
    Progress,
    check,
    execute,
    make_inputs,
    read_bandwidth,
    unseen,
    wall_clock,
)

CHILD = "strata_core.run.gpu_child"


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
class RunOutcome:
    """What ran, the facts a report starts with, its kernels' reports and the notes said on
    the way (a card that cannot run, the host table's start lines)."""

    backend: str
    facts: HostFacts | GpuFacts
    kernels: KernelReports
    said: tuple[str, ...] = ()


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


def _settings(plan: Plan) -> tuple[RunSettings, HostRun]:
    if plan.run is None or plan.host is None:
        raise StrataError("this plan was not made for a run")
    return plan.run, plan.host


def _host_library(host: HostRun) -> tuple[Any, int]:
    """The host kernel library with the plan's instruction set, threads and OpenMP wait
    policy, and the threads it runs."""
    from ..host.library import HostLibrary

    lib = HostLibrary(wait_policy=host.threads.wait_policy)
    lib.set_isa(host.isa)
    return lib, lib.set_threads(host.threads.threads or 0)


def _card(plan: Plan, settings: RunSettings) -> GpuCard:
    return GpuCard(
        plan.backend,
        plan.plugin,
        settings.kernel_library,
        plan.device.index,
        settings.runtime_libraries,
    )


def _runtimes(settings: RunSettings) -> str:
    return ", ".join(dict.fromkeys(Path(p).name for p in settings.runtime_libraries))


@contextlib.contextmanager
def gpu_child(
    module: str,
    job: object,
    settings: RunSettings,
    what: str,
    progress: Callable[[str], None] | None = None,
) -> Iterator[tuple[dict[str, Any], Path]]:
    """Run ``python -m module FOLDER`` on ``job`` within the plan's time limit; its answer
    and FOLDER, after the lines it said are said. Each line the child prints on stdout goes
    to ``progress`` as it comes. NoGpuRun when it dies, hangs, fails or finds no card that
    runs; StrataError when it refuses."""
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        with tempfile.TemporaryDirectory(prefix="strata-gpu-") as folder:
            where = Path(folder)
            status, late, last = _run_child(module, job, settings, where, progress)
            yield from _answer(what, settings, where, status, late, last)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM ends the command as Ctrl-C does: the child is stopped and its folder removed."""
    raise SystemExit(128 + signum)


def _run_child(
    module: str,
    job: object,
    settings: RunSettings,
    where: Path,
    progress: Callable[[str], None] | None,
) -> tuple[int, str | None, str]:
    """Run the child in ``where``; its exit status, the limit it ran past (None if none), and
    the last line of its stderr. The child never outlives this call."""
    (where / JOB).write_bytes(pickle.dumps(job))
    done = threading.Event()
    late: list[str] = []
    contact = min(settings.contact_timeout_s, settings.timeout_s)

    def watch() -> None:
        if done.wait(contact):
            return
        if contact < settings.timeout_s and not (where / CONTACT).exists():
            late.append("contact")
        elif done.wait(settings.timeout_s - contact):
            return
        else:
            late.append("run")
        child.kill()

    with open(where / "stderr", "w+") as stderr:
        with HeldSignals() as held:
            child = subprocess.Popen(
                [sys.executable, "-m", module, str(where)],
                env=dict(settings.child_env),
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        try:
            held.deliver()
            threading.Thread(target=watch, daemon=True).start()
            assert child.stdout is not None
            for line in child.stdout:
                if progress is not None:
                    progress(line.rstrip("\n"))
            status = child.wait()
        finally:
            done.set()
            if child.poll() is None:
                child.kill()
                child.wait()
        stderr.seek(0)
        last = (stderr.read().strip().splitlines() or ["no message"])[-1]
    return status, late[0] if late else None, last


def _answer(
    what: str, settings: RunSettings, where: Path, status: int, late: str | None, last: str
) -> Iterator[tuple[dict[str, Any], Path]]:
    if late == "contact":
        raise NoGpuRun(
            f"{what} gave no answer within {settings.contact_timeout_s:g} s of its first call "
            "to the runtime (STRATA_HIP_PROBE_TIMEOUT sets the limit)"
        )
    if late == "run":
        raise NoGpuRun(
            f"{what} gave no answer within {settings.timeout_s:g} s "
            "(STRATA_RUN_TIMEOUT sets the limit)"
        )
    if status < 0:
        raise NoGpuRun(f"{what} died of {signal.Signals(-status).name}")
    if status != 0 or not (where / ANSWER).is_file():
        raise NoGpuRun(f"{what} failed (exit status {status}: {last})")
    answer = json.loads((where / ANSWER).read_text())
    for level, line in answer.get("said", ()):
        say(level, line)
    if "no_gpu" in answer:
        raise NoGpuRun(answer["no_gpu"])
    if "refused" in answer:
        raise StrataError(answer["refused"])
    yield answer, where


def run_on_gpu(plan: Plan, progress: Progress = unseen) -> RunOutcome:
    settings, host = _settings(plan)
    path = PATHS.get(plan.kernels["prompt_gemm"].variant)
    decision = plan.tuning.get(path.table) if path and path.table else None
    job = GpuJob(
        _card(plan, settings),
        settings.workload,
        plan.kernels,
        settings.gemm_libraries,
        decision.loaded if decision else None,
        path is not None and plan.verbose(path.library),
    )
    what = f"the GPU run ({BACKENDS[plan.backend].runtime_name} {_runtimes(settings)})"

    def on_the_card(line: str) -> None:
        progress("running the workload on the card", line)

    with gpu_child(CHILD, job, settings, what, on_the_card) as (answer, where):
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
    return RunOutcome(plan.backend, facts, KernelReports(reports, facts.read_gbs))


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

    settings, host = _settings(plan)
    lib, threads = _host_library(host)
    table = host.tuning
    for line in table.log:
        note(line)
    verbose = plan.verbose("hipblaslt")
    dispatch = TunedDispatch(table.loaded, "host BLAS", verbose=verbose)
    progress("drawing the workload's inputs")
    inputs = make_inputs(settings.workload)
    progress("measuring the DRAM read bandwidth")
    read_gbs = read_bandwidth(lib.read_bytes, inputs.expert_qs)
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


def tune_on_card(
    plan: Plan,
    path: str,
    cases: tuple[tuple[Any, ...], ...],
    repeats: int,
    min_gain: float,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """Calibrate the library of prompt GEMM path ``path`` on the plan's card
    (strata_core.run.card_tuning); the child's answer: the table's text, its architecture and
    version, each case's times."""
    from ..tuning.libraries import library_paths
    from .card_tuning import CardTuneJob

    settings, _ = _settings(plan)
    job = CardTuneJob(
        _card(plan, settings),
        path,
        library_paths(path, settings.child_env),
        cases,
        repeats,
        min_gain,
    )
    runtime = BACKENDS[plan.backend].runtime_name
    what = f"the calibration on the card ({runtime} {_runtimes(settings)})"
    with gpu_child("strata_core.run.card_tuning", job, settings, what, progress) as (answer, _):
        return answer
