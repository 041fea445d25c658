"""Run-time use of a tuning table: the tuned solution for a shape, the default where the table
has none, and refusals counted (AMD_HIP.md "rocBLAS table"): a solution refused at run time
falls back to the default for that call, and after three refusals for good.

With ``verbose`` (STRATA_HIPBLASLT_VERBOSE=1 / STRATA_ROCBLAS_VERBOSE=1) the choice for each
shape is printed once and :meth:`TunedDispatch.summary` gives the
``tuned_launches=... fallbacks=...`` line printed at exit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

from .. import log
from .tables import DEFAULT, Table

R = TypeVar("R")
REFUSALS_BEFORE_DISABLING = 3


class SolutionRefused(Exception):
    """Raised by a launcher when the library refuses a tuned solution for a call."""


def say(level: str, line: str) -> None:
    """Log a dispatch line (``info`` or ``warning``)."""
    getattr(log, level)(line, kind="tuning")


class TunedDispatch:
    """``say(level, line)`` takes what the dispatch says: logged where it runs by default; a
    GPU run's child process keeps the lines for its parent to say."""

    def __init__(
        self,
        table: Table | None,
        label: str,
        verbose: bool = False,
        say: Callable[[str, str], None] = say,
    ) -> None:
        self.solutions = table.solutions() if table is not None else {}
        self.label = label
        self.verbose = verbose
        self.say = say
        self.refusals: Counter[tuple[Any, ...]] = Counter()
        self.disabled: set[tuple[Any, ...]] = set()
        self.announced: set[tuple[Any, ...]] = set()
        self.tuned_launches = 0
        self.default_launches = 0
        self.fallbacks = 0

    def choice(self, key: tuple[Any, ...]) -> str:
        if key in self.disabled:
            return DEFAULT
        return self.solutions.get(key, DEFAULT)

    def launch(self, key: tuple[Any, ...], run: Callable[[str], R]) -> R:
        """Run ``run(solution)`` with the shape's solution; on a refusal, the default."""
        solution = self.choice(key)
        if self.verbose and key not in self.announced:
            self.announced.add(key)
            self.say("info", f"{self.label}: {' '.join(map(str, key))} -> {solution}")
        if solution == DEFAULT:
            self.default_launches += 1
            return run(DEFAULT)
        try:
            result = run(solution)
        except SolutionRefused as refusal:
            self.fallbacks += 1
            self.refusals[key] += 1
            shape = " ".join(map(str, key))
            if self.refusals[key] >= REFUSALS_BEFORE_DISABLING:
                self.disabled.add(key)
                self.say(
                    "warning",
                    f"{self.label}: solution {solution} for {shape} refused "
                    f"{self.refusals[key]} times ({refusal}); the default runs from now on",
                )
            elif self.verbose:
                self.say(
                    "info",
                    f"{self.label}: solution {solution} for {shape} refused ({refusal}); "
                    "fallback to the default for this call",
                )
            self.default_launches += 1
            return run(DEFAULT)
        self.tuned_launches += 1
        return result

    def summary(self) -> str:
        return (
            f"{self.label}: tuned_launches={self.tuned_launches} "
            f"fallbacks={self.fallbacks} default_launches={self.default_launches} "
            f"disabled={len(self.disabled)}"
        )
