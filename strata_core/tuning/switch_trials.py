"""Calibratable switches: measured in alternating on/off pairs on the selected backend, and
kept for the run config's env only when the trial value wins by more than 3% in every one of
ROUNDS measurements (AMD_HIP.md, "Switches for shared-expert and draft streams":
`--calibrate`)."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Protocol

import attrs

from ..api.records import RunContext
from ..people import counted, duration

#: "only when it wins by more than 3%"
MIN_GAIN = 1.03
#: independent measurements of each switch; it is kept only when every one keeps it
ROUNDS = 2
#: each timed sample runs the call this long at least, so that a sample is not timer noise
SAMPLE_S = 0.01


@attrs.frozen
class SwitchTrial:
    """``switch`` set to ``value`` against unset; ``op`` is the operation it changes, or None
    where only the engine on a GPU can measure it."""

    switch: str
    value: str
    op: str | None
    never: Callable[[RunContext], str | None] = lambda context: None


def _sh_stream_never(context: RunContext) -> str | None:
    if context.os == "windows" and context.kv_streaming:
        return (
            "never measured on Windows with KV streaming: the fork stopped the engine "
            "there (AMD_HIP.md)"
        )
    return None


TRIALS = (
    SwitchTrial("STRATA_HIP_ROUTER_OLD", "1", "router_topk"),
    SwitchTrial("STRATA_TOPK_OLD", "1", "topk"),
    SwitchTrial("STRATA_TOPK_STREAM", "0", "topk_prompt"),
    SwitchTrial("STRATA_SH_STREAM", "1", None, _sh_stream_never),
)


@attrs.frozen
class Measured:
    """Alternating off/on pairs: the median time of each side, the median of the pairs'
    off/on ratios (above 1 the trial is faster) and half their interquartile range."""

    off_s: float
    on_s: float
    ratio: float
    spread: float
    pairs: int
    seconds: float
    settled: bool

    def describe(self) -> str:
        gain = f"{(self.ratio - 1) * 100:+.1f}% ± {self.spread * 100:.1f}%"
        budget = "" if self.settled else ", the time budget ran out first"
        return (
            f"{duration(self.off_s)} -> {duration(self.on_s)}, {gain} "
            f"(medians of {counted(self.pairs, 'pair')} in {duration(self.seconds)}{budget})"
        )


@attrs.frozen
class TrialResult:
    switch: str
    value: str
    measured: Measured | None
    keep: bool
    reason: str


def _batch(run: Callable[[], object]) -> Callable[[], float]:
    """``run`` repeated for at least SAMPLE_S; the seconds of one call."""
    start = time.perf_counter()
    run()
    calls = max(1, math.ceil(SAMPLE_S / max(time.perf_counter() - start, 1e-9)))

    def sample() -> float:
        start = time.perf_counter()
        for _ in range(calls):
            run()
        return (time.perf_counter() - start) / calls

    return sample


def alternate(
    run_off: Callable[[], object],
    run_on: Callable[[], object],
    min_pairs: int,
    min_gain: float,
    budget_s: float,
) -> Measured:
    """Pairs of off and on samples, the order swapped each pair, until the ratio's spread is
    small against the threshold (at most half of min_gain - 1) or clearly apart from it (more
    than two spreads away), after ``min_pairs``; or until ``budget_s`` is spent."""
    off, on = _batch(run_off), _batch(run_on)
    offs: list[float] = []
    ons: list[float] = []
    start = time.perf_counter()
    while True:
        first, second = (off, on) if len(offs) % 2 == 0 else (on, off)
        a, b = first(), second()
        offs.append(a if first is off else b)
        ons.append(b if first is off else a)
        if len(offs) < min_pairs:
            continue
        ratios = [x / y for x, y in zip(offs, ons, strict=True)]
        ratio = statistics.median(ratios)
        low, _, high = statistics.quantiles(ratios, n=4)
        spread = (high - low) / 2
        settled = spread <= (min_gain - 1) / 2 or abs(ratio - min_gain) > 2 * spread
        spent = time.perf_counter() - start
        if settled or spent > budget_s:
            return Measured(
                statistics.median(offs),
                statistics.median(ons),
                ratio,
                spread,
                len(offs),
                spent,
                settled,
            )


def verdict(trial: SwitchTrial, measured: list[Measured], min_gain: float) -> TrialResult:
    """Kept only when every measurement's gain is past ``min_gain`` by more than its spread:
    a result that does not repeat is left unset."""
    keeps = [m.ratio - m.spread > min_gain for m in measured]
    threshold = f"{(min_gain - 1) * 100:.0f}%"
    said = f"{trial.switch}={trial.value}: " + "; again ".join(m.describe() for m in measured)
    if all(keeps):
        reason = f"{said}; past {threshold} by more than the spread: kept"
    elif any(keeps):
        reason = f"{said}; the measurements disagree: left unset"
    else:
        reason = f"{said}; not past {threshold} by more than the spread: left unset"
    return TrialResult(trial.switch, trial.value, measured[0], all(keeps), reason)


class TrialBench(Protocol):
    """The backend the switches are measured on (the host backend's:
    strata_core.host.switch_bench)."""

    def variant(self, op: str, switches: Mapping[str, str]) -> str:
        """The variant of ``op`` the backend runs with ``switches`` set."""

    def call(self, op: str) -> Callable[[str], object]:
        """The call that runs ``op`` with a variant."""


def run_trials(
    bench: TrialBench, context: RunContext, repeats: int, min_gain: float, budget_s: float
) -> list[TrialResult]:
    """Each of TRIALS on ``bench``, for a run in ``context``: its switch set and unset in
    ROUNDS measurements of alternating pairs (at least ``repeats`` pairs, at most
    ``budget_s`` seconds in all), and the verdict; a trial that never runs in ``context``,
    that only the engine on a GPU can measure, or whose switch changes no variant here is
    not measured."""
    return [_trial(trial, bench, context, repeats, min_gain, budget_s) for trial in TRIALS]


def _trial(
    trial: SwitchTrial,
    bench: TrialBench,
    context: RunContext,
    repeats: int,
    min_gain: float,
    budget_s: float,
) -> TrialResult:
    never = trial.never(context)
    if never or trial.op is None:
        why = never or "only the engine on a GPU can measure it; the host backend has no such path"
        return TrialResult(trial.switch, trial.value, None, False, f"{trial.switch}: {why}")
    off = bench.variant(trial.op, {})
    on = bench.variant(trial.op, {trial.switch: trial.value})
    if off == on:
        why = f"the host backend runs {trial.op} the same way ({off}) at this workload"
        return TrialResult(
            trial.switch, trial.value, None, False, f"{trial.switch}={trial.value}: {why}"
        )
    call = bench.call(trial.op)
    measured = [
        alternate(partial(call, off), partial(call, on), repeats, min_gain, budget_s / ROUNDS)
        for _ in range(ROUNDS)
    ]
    return verdict(trial, measured, min_gain)
