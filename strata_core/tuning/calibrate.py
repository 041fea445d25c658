"""Calibration: measure every candidate solution of every case and write the winners.

The method (AMD_HIP.md, "Tuning table"): a heavy case runs first and is not measured (the
first case of a fresh process times clocks that are still ramping); candidates alternate
within each round so that drift hits them alike; each is timed by the median of its rounds;
the winner's output is checked against the default's; a winner must beat the default by the
minimum gain (1.05), else the row says ``default``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import attrs
import numpy as np

from .. import log
from .tables import DEFAULT, MIN_GAIN, Kind, Row, Table

Runner = Callable[[str], Any]


@attrs.frozen
class Case:
    key: tuple
    work: float
    label: str


class Tunable(Protocol):
    """A backend's tunable operation, as calibration sees it."""

    kind: Kind
    arch: str
    version: str

    def cases(self) -> Sequence[Case]: ...

    def candidates(self, case: Case) -> Sequence[str]:
        """The solutions to measure; the first is ``default``."""

    def prepare(self, case: Case) -> Runner:
        """Inputs for the case, and a function that runs one solution on them."""


@attrs.frozen
class Outcome:
    case: Case
    medians_us: dict[str, float]
    rejected: tuple[str, ...]
    row: Row


def _time(run: Runner, solution: str) -> tuple[float, Any]:
    start = time.perf_counter()
    result = run(solution)
    return (time.perf_counter() - start) * 1e6, result


def measure(
    run: Runner, candidates: Sequence[str], repeats: int, check: Callable[[Any, Any], bool]
) -> tuple[dict[str, float], tuple[str, ...]]:
    """Median microseconds per candidate over ``repeats`` alternating rounds, and the
    candidates whose output differs from the default's."""
    reference = run(DEFAULT)
    rejected = tuple(c for c in candidates[1:] if not check(run(c), reference))
    measured = [c for c in candidates if c not in rejected]
    times: dict[str, list[float]] = {c: [] for c in measured}
    for round_number in range(repeats):
        shift = round_number % len(measured)
        for solution in measured[shift:] + measured[:shift]:
            times[solution].append(_time(run, solution)[0])
    return {c: statistics.median(t) for c, t in times.items()}, rejected


def close_enough(a: Any, b: Any) -> bool:
    """Same shape, and equal within float32 rounding of a reordered sum."""
    a, b = np.asarray(a), np.asarray(b)
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-4, atol=1e-5 * scale))


def calibrate(
    tunable: Tunable,
    repeats: int = 7,
    min_gain: float = MIN_GAIN,
    progress: bool = False,
    check: Callable[[Any, Any], bool] = close_enough,
) -> tuple[Table, list[Outcome]]:
    cases = list(tunable.cases())
    heavy = max(cases, key=lambda c: c.work)
    warm = tunable.prepare(heavy)
    for solution in tunable.candidates(heavy):
        warm(solution)
    outcomes = []
    for number, case in enumerate(cases, 1):
        run = tunable.prepare(case)
        medians, rejected = measure(run, tunable.candidates(case), repeats, check)
        default_us = round(medians[DEFAULT], 2)
        best = min(medians, key=medians.__getitem__)
        best_us = round(medians[best], 2)
        winner = best if best != DEFAULT and default_us / best_us >= min_gain else DEFAULT
        row = Row(case.key, winner, default_us, best_us if best_us > 0 else default_us, 0)
        outcomes.append(Outcome(case, medians, rejected, row))
        if progress:
            verdict = (
                f"{winner} {default_us / best_us:.2f}x"
                if winner != DEFAULT
                else f"default (best {best} {default_us / best_us:.2f}x)"
            )
            wrong = f"; wrong output: {', '.join(rejected)}" if rejected else ""
            log.info(
                f"tune: [{number}/{len(cases)}] {case.label}: {verdict}, default "
                f"{default_us:.1f} us{wrong}",
                kind="progress",
            )
    meta = {
        "generator": "strata-core-tune",
        "stat": "median",
        "repeats": str(repeats),
        "verified": "rtol1e-4",
    }
    table = Table(
        tunable.kind, tunable.arch, tunable.version, tuple(o.row for o in outcomes), min_gain, meta
    )
    return table, outcomes
