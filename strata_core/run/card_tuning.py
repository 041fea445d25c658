"""Calibrating a card's prompt GEMM library: ``python -m strata_core.run.card_tuning FOLDER``
runs in a child process as the GPU run does (strata_core.run.gpu_child), measures the
library's default and every solution it lists for each case on the card by the method of
strata_core.tuning.calibrate, prints a progress line per case on stdout, and leaves the table
and each case's times in ``answer.json``.

Each solution is timed by the card's events over ``BATCH`` launches queued behind the read
kernel (so the events time the GPU alone), on inputs uploaded once; its output is checked
against the default's before it is timed.
"""

from __future__ import annotations

import json
import pickle
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ..blas.gemm import BlasGemm, GemmShape
from ..gpu.library import GpuKernels
from ..native_calls import mark_calls_in
from ..tuning.calibrate import Case, Runner
from .gpu_backend import GpuCard, HalfGemm
from .gpu_job import ANSWER, CALLING, CONTACT, JOB
from .workload import close_to

#: launches a timing takes, and bytes the read kernel holds them behind (on an H200, 1 GiB
#: is about 0.25 ms: time enough to queue them all)
BATCH = 5
HOLD_BYTES = 1 << 30
CARD_META = {"verified": "rtol2e-3", "timer": "events", "batch": str(BATCH)}


@attrs.frozen
class CardTuneJob:
    """What the child needs: the card as a GPU run opens it, the prompt GEMM path and its
    library's files, the cases (T, op, N, K, dtype) and the method's settings."""

    card: GpuCard
    path: str
    gemm_libraries: tuple[str, ...]
    cases: tuple[tuple[Any, ...], ...]
    repeats: int
    min_gain: float
    seed: int = 0


class CardRunner:
    """One case's inputs on the card: ``run(solution)`` gives the output, ``seconds`` the
    time of one launch."""

    def __init__(self, gpu: GpuKernels, blas: BlasGemm, shape: GemmShape, seed: int) -> None:
        self.gpu, self.blas, self.shape = gpu, blas, shape
        rng = np.random.default_rng(seed)
        dtype = np.float16 if blas.dtype == "f16" else np.float32
        self.x = rng.standard_normal((shape.tokens, shape.k), dtype=np.float32).astype(dtype)
        self.w = rng.standard_normal((shape.n, shape.k), dtype=np.float32).astype(dtype)
        self.y = np.empty((shape.tokens, shape.n), dtype=np.float32)
        rt = gpu.runtime
        arrays = {"x": self.x, "w": self.w, "y": self.y}
        self.buffers = {name: rt.malloc(a.nbytes) for name, a in arrays.items()}
        rt.upload(self.buffers["x"], self.x, gpu.stream)
        rt.upload(self.buffers["w"], self.w, gpu.stream)
        self.at = {name: rt.address(b) for name, b in self.buffers.items()}

    def _launch(self, solution: str) -> Callable[[], None]:
        at = self.at
        stream = self.gpu.stream_address
        return self.blas.launcher(self.shape, solution, at["x"], at["w"], at["y"], stream)

    def __call__(self, solution: str) -> np.ndarray:
        self.gpu.launch_timed([self._launch(solution)], [(self.y, self.buffers["y"])])
        return self.y.copy()

    def seconds(self, solution: str) -> float:
        return self.gpu.launch_timed([self._launch(solution)] * BATCH, []) / BATCH

    def close(self) -> None:
        for buffer in self.buffers.values():
            self.gpu.runtime.free(buffer)


class CardGemmTunable:
    def __init__(
        self, gpu: GpuKernels, blas: BlasGemm, cases: Sequence[tuple[Any, ...]], seed: int
    ):
        self.gpu, self.blas, self.seed = gpu, blas, seed
        self.kind, self.arch, self.version = blas.kind, gpu.gpu.gfx, blas.version
        self._cases = list(cases)
        self.runners: list[CardRunner] = []

    def cases(self) -> list[Case]:
        return [
            Case(
                self.kind.key_for(t, n, k, dtype, op),
                2.0 * t * n * k,
                f"T={t} {op} {n}x{k} {dtype}",
            )
            for t, op, n, k, dtype in self._cases
        ]

    def _shape(self, case: Case) -> GemmShape:
        t, n, k = case.key[:3]
        return GemmShape(t, n, k)

    def candidates(self, case: Case) -> Sequence[str]:
        return self.blas.solutions(self._shape(case))

    def prepare(self, case: Case) -> Runner:
        for runner in self.runners:
            runner.close()
        self.runners = [CardRunner(self.gpu, self.blas, self._shape(case), self.seed)]
        return self.runners[0]

    def seconds(self, run: Any, solution: str) -> float:
        return float(run.seconds(solution))


#: a candidate's product against the default's: the same half products summed in another
#: order, held to what a GPU run's prompt GEMM is held to
gemm_close = partial(close_to, tolerance=HalfGemm.tolerance)


def run(folder: Path) -> dict[str, Any]:
    from ..blas.open import open_blas
    from ..errors import NoGpuRun, StrataError
    from ..tuning.calibrate import calibrate
    from ..tuning.tables import render
    from .gpu_backend import open_gpu

    job: CardTuneJob = pickle.loads((folder / JOB).read_bytes())
    try:
        opened = open_gpu(job.card, HOLD_BYTES)
        (folder / CONTACT).touch()
        blas = open_blas(job.path, job.gemm_libraries, opened.kernels.runtime)
    except NoGpuRun as why:
        return {"no_gpu": str(why)}
    except StrataError as refused:
        return {"refused": str(refused)}
    tunable = CardGemmTunable(opened.kernels, blas, job.cases, job.seed)

    def progress(line: str) -> None:
        print(line, flush=True)

    progress(
        f"tune: {blas.library} {blas.version} ({blas.path}) on {opened.card.name} "
        f"({opened.card.gfx}): {len(job.cases)} cases, {job.repeats} rounds each"
    )
    try:
        table, outcomes = calibrate(
            tunable, job.repeats, job.min_gain, progress, gemm_close, CARD_META
        )
    except StrataError as failed:
        return {"refused": str(failed)}
    finally:
        for runner in tunable.runners:
            runner.close()
        blas.close()
        opened.kernels.close()
    return {
        "library": blas.library,
        "path": blas.path,
        "version": table.version,
        "arch": table.arch,
        "card": opened.card.name,
        "table": render(table),
        "cases": [
            {
                "case": o.case.label,
                "default_us": o.row.default_us,
                "best_us": o.row.best_us,
                "solution": o.row.solution,
                "measured": len(o.medians_us),
                "refused_or_wrong": list(o.rejected),
            }
            for o in outcomes
        ],
    }


if __name__ == "__main__":
    where = Path(sys.argv[1])
    mark_calls_in(where / CALLING)
    (where / ANSWER).write_text(json.dumps(run(where)))
