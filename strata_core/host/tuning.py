"""The host backend's calibration: its tunable operation, the prompt GEMM, the cases measured,
and the threads its table records."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import StrataError
from ..tuning.calibrate import Case, Runner, calibrate, wall_clock
from ..tuning.kinds import HOST
from ..tuning.tables import Table
from .gemm import SOLUTIONS, PromptGemm
from .platform import blas_version, isa_level
from .threads import ThreadChoice

#: Prompt GEMM shapes (op, N, K) of the default workload, and its token buckets.
DEFAULT_SHAPES = (
    ("qkv", 4096, 2048),
    ("o", 2048, 2048),
    ("gate_up", 8192, 2048),
    ("down", 2048, 4096),
)
DEFAULT_TOKENS = (256, 512, 1024, 2048)


def cases_for(
    tokens: Sequence[int], shapes: Any = DEFAULT_SHAPES, dtype: str = "f32"
) -> list[tuple[Any, ...]]:
    """(T, op, N, K, dtype) for every shape at every token count: the case order of a table."""
    return [(t, op, n, k, dtype) for op, n, k in shapes for t in tokens]


def case_bytes(case: tuple[Any, ...]) -> int:
    """About the host memory that one case (T, op, N, K, dtype) of a calibration takes, on the
    host backend or in a card's child: X and W drawn in FP32 (and for f16 their FP16 copies),
    W transposed, and two results in FP32."""
    t, _, n, k, dtype = case
    fp16_copies = 2 * (t * k + k * n) if dtype == "f16" else 0
    size: int = 4 * (t * k + 2 * k * n + 2 * t * n) + fp16_copies
    return size


class HostGemmTunable:
    """The host backend's prompt GEMM as calibration measures it (a Tunable): each case's
    inputs drawn from ``seed``, every solution of PromptGemm timed by the wall clock;
    ``shapes``: the cases (T, op, N, K, dtype)."""

    kind = HOST

    def __init__(self, cases: Sequence[tuple[Any, ...]], seed: int = 0) -> None:
        self.arch = isa_level()
        self.version = blas_version()
        self.shapes = tuple(cases)
        self._seed = seed

    def cases(self) -> list[Case]:
        return [
            Case((t, n, k, dtype, op), 2.0 * t * n * k, f"T={t} {op} {n}x{k} {dtype}")
            for t, op, n, k, dtype in self.shapes
        ]

    def candidates(self, case: Case) -> list[str]:
        return list(SOLUTIONS)

    def prepare(self, case: Case) -> Runner:
        t, n, k, dtype, _ = case.key
        rng = np.random.default_rng(self._seed)
        x = rng.standard_normal((t, k), dtype=np.float32)
        w = rng.standard_normal((k, n), dtype=np.float32)
        if dtype == "f16":
            x, w = x.astype(np.float16), w.astype(np.float16)
        gemm = PromptGemm(w)
        return lambda solution: gemm(x, solution)

    seconds = staticmethod(wall_clock)


def tunable_for(
    cases: Sequence[tuple[Any, ...]] | None, tokens: Sequence[int] | None
) -> HostGemmTunable:
    """The host GEMM cases a calibration measures: ``cases``, else every default shape at
    ``tokens`` (default: DEFAULT_TOKENS)."""
    return HostGemmTunable(cases or cases_for(tokens or DEFAULT_TOKENS))


def measured_threads(env: Mapping[str, str]) -> ThreadChoice:
    """The host kernels' threads, measured now on the default workload's decode step, for a
    host table to record."""
    from ..answer_cache import Recorder
    from ..api.records import Workload
    from ..child import ChildFailed
    from .threads import choose, measure

    try:
        return choose(measure(Workload(), env, Recorder()), "measured by tune")
    except ChildFailed as failed:
        raise StrataError(f"tune: the host threads' trial gave no answer ({failed})") from None


def calibrate_host(
    tunable: HostGemmTunable,
    threads: ThreadChoice,
    repeats: int,
    min_gain: float,
    progress: Callable[[str], None],
) -> Table:
    """The host GEMM table of ``tunable``'s cases, its header recording ``threads``."""
    meta = {"threads": str(threads.threads)}
    if threads.wait_policy:
        meta["omp_wait_policy"] = threads.wait_policy
    table, _ = calibrate(tunable, repeats, min_gain, progress, meta=meta)
    return table
