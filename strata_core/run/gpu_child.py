"""The GPU run's child process: ``python -m strata_core.run.gpu_child FOLDER``.

It reads the job (``job.pickle``) from FOLDER, loads the card's runtime, the plugin's code
object and the prompt GEMM's vendor library, runs every call of the workload on the card
(each timed on the GPU by events with the queue held, and from the host as a call), and
leaves the results in ``results.npz`` and its answer in ``answer.json`` (with the lines the
tuned dispatch said, for the parent to say). It checks nothing: the parent does, so
that a runtime or library that crashes, aborts or hangs takes only this process down.

Nothing imports this module: what the parent shares with it is strata_core.run.gpu_job, so
that ``python -m`` runs it fresh (runpy warns of a module imported before it runs).
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from ..native_calls import mark_calls_in
from .gpu_job import ANSWER, CALLING, CONTACT, JOB, RESULTS, GpuJob, flatten

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..api.records import KernelChoice
    from ..gpu.library import GpuKernels
    from ..gpu.step_graph import StepTimes
    from ..tuning.dispatch import TunedDispatch
    from .workload import Inputs


def _progress(what: str, detail: str = "") -> None:
    """A line on stdout, which the parent shows as the run's progress."""
    print(detail or what, flush=True)


def replayed_step(
    kernels: GpuKernels,
    gemm: Any,
    step: Inputs,
    choices: Mapping[str, KernelChoice],
    dispatch: TunedDispatch,
) -> StepTimes:
    """The calls of ``step`` recorded on buffers kept on the card, then timed as queued
    launches and as a graph (strata_core.gpu.step_graph)."""
    from ..gpu.step_graph import time_step
    from .workload import execute

    with kernels.recording() as recorded:
        execute(kernels, gemm, lambda call: (call(), 0.0), step, choices, dispatch)
        return time_step(recorded)


def run(folder: Path) -> dict[str, Any]:
    from ..errors import NoGpuRun, StrataError
    from ..gpu.step_graph import ReplayDiffers
    from ..tuning.dispatch import TunedDispatch
    from .gpu_backend import BlasPromptGemm, open_gpu, prompt_gemm
    from .workload import execute, make_inputs, one_step, wall_clock

    job: GpuJob = pickle.loads((folder / JOB).read_bytes())
    try:
        # the queue held by the read before each timed call, as bench/gpu_kernels.py times
        gpu = open_gpu(job.card, hold_bytes=job.workload.gpu_read_bytes)
    except NoGpuRun as why:
        return {"no_gpu": str(why)}
    except StrataError as refused:
        return {"refused": str(refused)}
    (folder / CONTACT).touch()
    _progress("drawing the workload's inputs")
    inputs = make_inputs(job.workload, job.seed)
    kernels = gpu.kernels
    said: list[tuple[str, str]] = []
    try:
        gemm = prompt_gemm(
            kernels, job.choices["prompt_gemm"].variant, job.gemm_libraries, inputs.w
        )
    except StrataError as missing:
        kernels.close()
        return {"no_gpu": f"the prompt GEMM cannot run on the card: {missing}"}
    blas = gemm.blas if isinstance(gemm, BlasPromptGemm) else None
    label = f"{blas.library} GEMM" if blas else f"{job.card.plugin} GEMM"
    dispatch = TunedDispatch(
        job.gemm_table, label, job.gemm_verbose, lambda level, line: said.append((level, line))
    )
    call_seconds: list[float] = []

    def on_the_card(call: Any) -> Any:
        result, took = wall_clock(call)
        call_seconds.append(took)
        return result, kernels.seconds

    try:
        read_gbs = kernels.read_bandwidth(job.workload.gpu_read_bytes)
        results = execute(kernels, gemm, on_the_card, inputs, job.choices, dispatch, _progress)
        _progress("replaying a decode step as a graph")
        try:
            step: dict[str, Any] = attrs.asdict(
                replayed_step(kernels, gemm, one_step(inputs), job.choices, dispatch)
            )
        except ReplayDiffers as differs:  # said after the parent has checked the results
            step = {"differs": str(differs)}
    except StrataError as failed:
        return {"refused": str(failed), "said": said}
    finally:
        gemm.close()
        kernels.close()
    if job.gemm_verbose:
        said.append(("info", dispatch.summary()))
    arrays: dict[str, Any] = flatten(results)
    np.savez(folder / RESULTS, **arrays)
    return {
        "card": gpu.card.name,
        "target": gpu.card.gfx,
        "code_object": str(kernels.code.path),
        "runtime": gpu.runtime_path,
        "read_bandwidth_gbs": read_gbs,
        "seconds": [took for _, took in results],
        "call_seconds": call_seconds,
        "step": step,
        "gemm": {"library": blas.library, "path": blas.path, "version": blas.version}
        if blas
        else None,
        "said": said,
    }


if __name__ == "__main__":
    where = Path(sys.argv[1])
    mark_calls_in(where / CALLING)
    (where / ANSWER).write_text(json.dumps(run(where)))
