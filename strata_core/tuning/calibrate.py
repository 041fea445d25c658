"""Calibration: measure every candidate solution of every case and write the winners.

The method (AMD_HIP.md, "Tuning table"): a heavy case runs first and is not measured (the
first case of a fresh process times clocks that are still ramping); candidates alternate
within each round so that drift hits them alike; each is timed by the median of its rounds;
the winner's output is checked against the default's (a candidate the library refuses, or
whose output differs, is left out); a winner must beat the default by the minimum gain
(1.05), else the row says ``default``. A tunable times its own runs where a wall clock is not
the measure (a card's, by its events).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import attrs
import numpy as np

from ..people import counted, duration
from .dispatch import SolutionRefused
from .kinds import Kind
from .tables import DEFAULT, MIN_GAIN, Row, Table

Runner = Callable[[str], Any]
#: seconds one run of a solution takes
Clock = Callable[[Runner, str], float]


@attrs.frozen
class Case:
    key: tuple[Any, ...]
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

    def seconds(self, run: Runner, solution: str) -> float:
        """How long one run of ``solution`` takes."""


@attrs.frozen
class Outcome:
    case: Case
    medians_us: dict[str, float]
    rejected: tuple[str, ...]
    row: Row


def wall_clock(run: Runner, solution: str) -> float:
    start = time.perf_counter()
    run(solution)
    return time.perf_counter() - start


def _agrees(run: Runner, solution: str, reference: Any, check: Callable[[Any, Any], bool]) -> bool:
    try:
        return check(run(solution), reference)
    except SolutionRefused:
        return False


def measure(
    run: Runner,
    candidates: Sequence[str],
    repeats: int,
    check: Callable[[Any, Any], bool],
    clock: Clock = wall_clock,
) -> tuple[dict[str, float], tuple[str, ...]]:
    """Median microseconds per candidate over ``repeats`` alternating rounds, and the
    candidates refused or whose output differs from the default's."""
    reference = run(DEFAULT)
    rejected = tuple(c for c in candidates[1:] if not _agrees(run, c, reference, check))
    measured = [c for c in candidates if c not in rejected]
    times: dict[str, list[float]] = {c: [] for c in measured}
    for round_number in range(repeats):
        shift = round_number % len(measured)
        for solution in measured[shift:] + measured[:shift]:
            times[solution].append(clock(run, solution) * 1e6)
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
    progress: Callable[[str], None] | None = None,
    check: Callable[[Any, Any], bool] = close_enough,
    meta: dict[str, str] | None = None,
) -> tuple[Table, list[Outcome]]:
    """Every case measured, in the tunable's order after the heavy case's warm-up; the table
    and each case's medians. ``progress`` takes a line per case; ``meta`` is written into the
    header (``verified`` says what ``check`` allows)."""
    cases = list(tunable.cases())
    heavy = max(cases, key=lambda c: c.work)
    warm = tunable.prepare(heavy)
    for solution in tunable.candidates(heavy):
        warm(solution)
    outcomes = []
    for number, case in enumerate(cases, 1):
        run = tunable.prepare(case)
        medians, rejected = measure(run, tunable.candidates(case), repeats, check, tunable.seconds)
        default_us = round(medians[DEFAULT], 2)
        best = min(medians, key=medians.__getitem__)
        best_us = round(medians[best], 2)
        winner = best if best != DEFAULT and default_us / best_us >= min_gain else DEFAULT
        row = Row(case.key, winner, default_us, best_us if best_us > 0 else default_us, 0)
        outcomes.append(Outcome(case, medians, rejected, row))
        if progress is not None:
            verdict = (
                f"{winner} {default_us / best_us:.2f}x"
                if winner != DEFAULT
                else "default (the fastest)"
                if best == DEFAULT
                else f"default (best {best} {default_us / best_us:.2f}x)"
            )
            wrong = f"; refused or wrong output: {', '.join(rejected)}" if rejected else ""
            progress(
                f"tune: [{number}/{len(cases)}] {case.label}: {verdict}, default "
                f"{duration(default_us * 1e-6)}, {counted(len(medians), 'solution')} "
                f"measured{wrong}"
            )
    header = {
        "generator": "strata-core-tune",
        "stat": "median",
        "repeats": str(repeats),
        "verified": "rtol1e-4",
    } | (meta or {})
    rows = tuple(o.row for o in outcomes)
    table = Table(tunable.kind, tunable.arch, tunable.version, rows, min_gain, header)
    return table, outcomes
