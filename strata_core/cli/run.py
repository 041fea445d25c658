"""`strata-core run`: plan for this PC, then run the workload on the plan's backend (checking
every result), or start the engine with `run -- ENGINE ARGS...`."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import log
from ..errors import StrataError
from ..plan.detection import PlanRequest
from ..plan.pipeline import PlanOutcome, make_plan
from ..plan.plan import HOST, Plan
from ..plan.resolve import without_flags
from .answers import dumps, kernel_dicts, run_answer
from .report import warn

if TYPE_CHECKING:
    from ..run import RunOutcome


def run(request: PlanRequest, as_json: bool, engine: Sequence[str] | None) -> int:
    """Run the workload, or with ``engine`` (``run --``: empty for the run config's exe)
    start the engine."""
    outcome = make_plan(request)
    command = None if engine is None else list(engine) or config_engine(outcome)
    notes = outcome.selection.notes if command else outcome.notes
    for note in notes:
        log.info(note, kind="note")
    warn(outcome.warnings)
    for line in outcome.plan.log:
        log.info(line, kind="start_line")
    if command:
        return start_engine(outcome.plan, request.env, command)
    return report_run(outcome, as_json)


def config_engine(outcome: PlanOutcome) -> list[str]:
    """`run --` with no engine named: the run config's ``exe`` (a relative path is the config
    file's neighbour) with its ``args``, less those the plan decides."""
    config, where = outcome.config, outcome.config_path
    if not config.exe:
        raise StrataError("run --: name the engine to start after --, or as exe in the run config")
    exe = Path(config.exe).expanduser()
    if "/" in config.exe and not exe.is_absolute() and where is not None:
        exe = where.parent / exe
    decided = {arg for arg in outcome.plan.engine_args() if arg.startswith("--")}
    return [str(exe), *without_flags(config.args, decided)]


def start_engine(plan: Plan, env: Mapping[str, str], engine: Sequence[str]) -> int:
    """Become the engine, with the resolved environment and arguments (exec: signals reach it
    and nothing is left behind). Only a failure to start returns: 127 when the engine is not
    found, 126 when it cannot be executed."""
    command = [*engine, *plan.engine_args()]
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(command[0], command, dict(env) | plan.engine_env())
    except FileNotFoundError:
        log.error(f"cannot start the engine {engine[0]}: not found")
        return 127
    except OSError as exc:
        why = exc.strerror or exc
        log.error(f"cannot start the engine {engine[0]}: {why}")
        return 126


def report_run(outcome: PlanOutcome, as_json: bool) -> int:
    from ..run import run_workload

    plan = outcome.plan
    if as_json or not log.for_a_person("info"):
        ran = run_workload(plan, plan.backend)
    else:
        from .progress import ProgressLine

        with ProgressLine(sys.stderr) as progress:
            ran = run_workload(plan, plan.backend, progress)
    if as_json:
        notes = [*outcome.notes, *ran.said]
        print(dumps(run_answer(ran, notes, outcome.warnings, plan.log)))
        return 0
    print(headline(ran))
    print(kernel_table(kernel_dicts(ran.kernels), "DRAM" if ran.backend == HOST else "card"))
    return 0


def headline(ran: RunOutcome) -> str:
    """The line above the kernel table: what ran, where, and the read bandwidth."""
    from ..run import HostFacts

    facts = ran.facts
    if isinstance(facts, HostFacts):
        return (
            f"host backend: {facts.library.name}, {facts.isa}, {facts.thread_choice.summary()} "
            f"({facts.thread_choice.source}); DRAM read {facts.read_gbs:.1f} GB/s; workload "
            f"{facts.workload}"
        )
    gemm = facts.gemm_library
    blas = f"{gemm['library']} {gemm['version']} ({gemm['path']}); " if gemm else ""
    return (
        f"GPU backend: {facts.plugin} {facts.code_object.name} on {facts.card} "
        f"({facts.target}), {facts.runtime_name} {facts.runtime}; {blas}card read "
        f"{facts.read_gbs:,.1f} GB/s; workload {facts.workload}; every result checked "
        "against the host backend"
    )


#: the expert step's reports, whose read share counts the distinct experts read
EXPERT_REPORTS = ("expert_matvec_q8_0", "expert_matvec_q8_0_batch")
#: SI prefixes for counts per second
PREFIXES = ((1e9, "G"), (1e6, "M"), (1e3, "K"))


def readable(value: float, unit: str) -> str:
    """A rate with a prefix where its unit is a count (2,370.4 M cells/s)."""
    if unit in ("tokens/s", "cells/s"):
        for scale, prefix in PREFIXES:
            if value >= scale:
                return f"{value / scale:,.1f} {prefix} {unit}"
    return f"{value:,.1f} {unit}"


def kernel_table(kernels: Mapping[str, dict[str, Any]], memory: str) -> str:
    """The run's kernels under column headers; a read share above 100% is cache-resident. On a
    card the median is the GPU's time (events, the queue held) and the host's call time is
    beside it."""
    on_card = any(r.get("call_ms") is not None for r in kernels.values())
    median = "GPU median" if on_card else "median"
    rows = [("kernel", "variant", "calls", "checked", median, "spread", "throughput", "read",
             f"of {memory} read", *(("host call",) if on_card else ()))]  # fmt: skip
    for name, r in kernels.items():
        share = r["bandwidth_of_read"]
        of_read = (
            ""
            if name not in ("matvec_q8_0", *EXPERT_REPORTS, "topk_prompt") or share is None
            else "cache-resident"
            if share > 1
            else f"{share:.0%}"
        )
        rows.append(
            (
                name,
                r["variant"],
                str(r["calls"]),
                str(r["checked"]),
                f"{r['median_ms']:.3f} ms",
                f"±{r['spread_ms']:.3f} ms",
                readable(r["throughput"], r["unit"]),
                f"{r['bandwidth_gbs']:,.1f} GB/s",
                of_read,
                *((f"{r['call_ms']:.3f} ms",) if on_card else ()),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    left = {0, 1}
    return "\n".join(
        "  "
        + "  ".join(
            cell.ljust(w) if i in left else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    )
