"""Calibratable switches: measured in alternating on/off pairs on the selected backend, and
written into the run config's env only when the trial value wins by more than 3%
(AMD_HIP.md, "Switches for shared-expert and draft streams": `--calibrate`)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import attrs

from ..records import RunContext

MIN_WIN = 1.03


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
class TrialResult:
    switch: str
    value: str
    ratio: float | None  # unset time / trial time; above 1 the trial is faster
    keep: bool
    reason: str


def alternate(run_off: Callable[[], object], run_on: Callable[[], object], pairs: int) -> float:
    """Median of unset / trial times over ``pairs`` pairs, the order swapped each pair."""
    run_off(), run_on()
    off: list[float] = []
    on: list[float] = []
    for pair in range(pairs):
        order = ((run_off, off), (run_on, on))
        for run, times in order if pair % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
    return statistics.median(off) / statistics.median(on)


def verdict(trial: SwitchTrial, ratio: float) -> TrialResult:
    keep = ratio > MIN_WIN
    change = f"{(ratio - 1) * 100:+.1f}%"
    reason = (
        f"{trial.switch}={trial.value} is {change} faster; written into the run config"
        if keep
        else f"{trial.switch}={trial.value} changes speed by {change}, not more "
        f"than {(MIN_WIN - 1) * 100:.0f}%; left unset"
    )
    return TrialResult(trial.switch, trial.value, ratio, keep, reason)
