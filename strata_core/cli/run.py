"""`strata-core run`: plan for this PC, then run the workload on the plan's backend (checking
every result), or start the engine with `run -- ENGINE ARGS...`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import log, people
from ..answer_cache import Recorder
from ..errors import StrataError
from ..plan.pipeline import PlanOutcome, make_plan
from ..plan.plan import HOST
from ..plan.resolve import without_flags
from .answers import dumps, kernel_dicts, run_answer
from .engine_start import start_engine
from .options import detection_options, ignored_planning_options, planning_options, positive_int
from .report import warn
from .request import plan_request

if TYPE_CHECKING:
    from ..run import RunOutcome, StepReport


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--json, the host threads, and what the run plans for."""
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--threads", type=positive_int, help="host threads (default: one per core)")
    planning_options(parser)
    detection_options(parser)


def ignored_options(args: argparse.Namespace) -> list[str]:
    """Options that would otherwise be ignored in silence (``args.engine``: the engine's
    command line after `run --`, or None)."""
    problems = ignored_planning_options(args)
    if args.engine is not None and args.json:
        problems.append("run --json reports the workload; with -- ENGINE the engine runs instead")
    return problems


def run(args: argparse.Namespace, env: Mapping[str, str], recorder: Recorder | None = None) -> int:
    """Run the workload, or with ``args.engine`` (``run --``: empty for the run config's exe)
    start the engine."""
    engine = args.engine
    request = plan_request(args, env, recorder, engine)
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
    return report_run(outcome, args.json)


def config_engine(outcome: PlanOutcome) -> list[str]:
    """`run --` with no engine named: the run config's ``exe`` with its ``args``, less those
    the plan decides. A path with a slash (``./eng.sh``, ``build-hip/strata``) is the config
    file's neighbour, never looked for on PATH; a bare name is looked for on PATH."""
    config, where = outcome.config, outcome.config_path
    if not config.exe:
        raise StrataError("run --: name the engine to start after --, or as exe in the run config")
    exe = os.path.expanduser(config.exe)
    if "/" in exe and not os.path.isabs(exe) and where is not None:
        exe = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(where)), exe))
    decided = {arg for arg in outcome.plan.engine_args() if arg.startswith("--")}
    return [exe, *without_flags(config.args, decided)]


def report_run(outcome: PlanOutcome, as_json: bool) -> int:
    """Run the plan's workload (a progress line for a person) and report it: the headline
    and the kernel table, or the JSON answer."""
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
    columns = people.width()
    memory = "DRAM" if ran.backend == HOST else "card"
    read_gbs = ran.kernels.read_gbs
    step = [] if ran.step is None else people.wrapped(step_line(ran.step, read_gbs), columns)
    people.show(
        [*people.wrapped(headline(ran), columns),
         *kernel_table(kernel_dicts(ran.kernels), memory, columns), *step]
    )  # fmt: skip
    return 0


def step_line(step: StepReport, read_gbs: float) -> str:
    """The decode step on the card: replayed as a graph and as queued launches, each with its
    share of the card's read over the step's bytes."""
    times = step.times

    def timed(seconds: float) -> str:
        share = step.share_of_read(seconds, read_gbs)
        return f"{people.duration(seconds)} ({share:.0%} of the card's read)"

    queued = f"{timed(times.queued_s)} as queued launches"
    size = people.decimal_size(step.bytes_read)
    head = f"{step.name} on the card: {times.launches} launches reading {size}"
    if times.graph_s is None:
        return f"{head}: {queued}; no graph replay: {times.graph_missing}"
    if times.handover_s is None:
        return (
            f"{head}: {timed(times.graph_s)} as a graph, {queued}; no overlapping launches: "
            f"{times.handover_missing}"
        )
    overlapping = f"{timed(times.handover_s)} as a graph of launches that overlap the one before"
    return f"{head}: {timed(times.graph_s)} as a graph, {overlapping}, {queued}"


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
#: the reports whose read is held against the memory's read rate
READ_SHARES = ("matvec_q8_0", *EXPERT_REPORTS, "topk_prompt")
#: SI prefixes for counts per second, and for GFLOP/s
PREFIXES = ((1e9, "G"), (1e6, "M"), (1e3, "K"))


def readable(value: float, unit: str) -> str:
    """A rate with a prefix where its unit is a count (2,370.4 M cells/s), and in TFLOP/s
    from a thousand GFLOP/s."""
    if unit in ("tokens/s", "cells/s"):
        for scale, prefix in PREFIXES:
            if value >= scale:
                return f"{value / scale:,.1f} {prefix} {unit}"
    if unit == "GFLOP/s" and value >= 1e3:
        return f"{value / 1e3:,.1f} TFLOP/s"
    return f"{value:,.1f} {unit}"


def read_cell(name: str, kernel: Mapping[str, Any]) -> str:
    """The kernel's read rate, with its share of the memory's read rate where the workload
    holds it against it (above 100%: the data came from a cache)."""
    share = kernel["bandwidth_of_read"]
    rate = f"{kernel['bandwidth_gbs']:,.1f} GB/s"
    from ..run.workload import report_kind  # loaded by the run already

    if report_kind(name) not in READ_SHARES or share is None:
        return rate
    return f"{rate} ({'cached' if share > 1 else f'{share:.0%}'})"


def kernel_table(
    kernels: Mapping[str, dict[str, Any]], memory: str, columns: int | None = None
) -> list[str]:
    """The run's kernels under column headers: calls checked of calls made, times in the unit
    a person reads, rates, and the read held against the ``memory``'s read rate. On a card
    the median is the GPU's time (events, the queue held) and the host's call time is beside
    it. A table wider than ``columns`` (or 100) puts each kernel's name and variant on a line
    of its own above its figures."""
    on_card = any(r.get("call_ms") is not None for r in kernels.values())
    rows = [(
        "kernel", "variant", "checked", "GPU median" if on_card else "median", "spread",
        "throughput", f"read (of {memory}'s)", *(("host call",) if on_card else ()),
    )]  # fmt: skip
    for name, r in kernels.items():
        rows.append(
            (
                name,
                r["variant"],
                f"{r['checked']}/{r['calls']}",
                people.duration(r["median_ms"] / 1e3),
                f"±{people.duration(r['spread_ms'] / 1e3)}",
                readable(r["throughput"], r["unit"]),
                read_cell(name, r),
                *((people.duration(r["call_ms"] / 1e3),) if on_card else ()),
            )
        )
    left = {0, 1}
    right = set(range(len(rows[0]))) - left
    lines = people.table(rows, right=right, columns=columns)
    if max(len(line) for line in lines) + 2 <= min(columns or people.TABLE_COLUMNS, 100):
        return [f"  {line}" for line in lines]
    figures = people.table([row[2:] for row in rows], right=range(len(rows[0]) - 2))
    out = [f"  {rows[0][0]} ({rows[0][1]})", f"      {figures[0]}"]
    for row, line in zip(rows[1:], figures[1:], strict=True):
        out += [f"  {row[0]} ({row[1]})", f"      {line}"]
    return out
