"""`strata-core run`: plan for this PC, then run the workload on the plan's backend (checking
every result), or start the engine with `run -- ENGINE ARGS...`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence

from .errors import StrataError
from .pipeline import PlanRequest, make_plan
from .plan import HOST, Plan
from .report import warn


def run(request: PlanRequest, as_json: bool, engine: Sequence[str]) -> int:
    outcome = make_plan(request)
    for note in outcome.notes:
        print(note, file=sys.stderr)
    warn(outcome.warnings)
    for line in outcome.plan.log:
        print(line, file=sys.stderr)
    if engine:
        return start_engine(outcome.plan, request.env, engine)
    return report_run(outcome.plan, as_json)


def start_engine(plan: Plan, env: Mapping[str, str], engine: Sequence[str]) -> int:
    """Start the engine with the resolved environment and arguments; its exit status is ours."""
    command = [*engine, *plan.engine_args()]
    try:
        child = subprocess.run(command, env=dict(env) | plan.engine_env())
    except OSError as exc:
        raise StrataError(f"cannot start the engine {engine[0]}: {exc.strerror or exc}") from None
    if child.returncode < 0:
        return 128 + -child.returncode
    return child.returncode


def report_run(plan: Plan, as_json: bool) -> int:
    from .run import run_workload

    outcome = run_workload(plan, plan.backend, lambda line: print(line, file=sys.stderr))
    if as_json:
        answer = {"backend": outcome.backend, **outcome.facts, "kernels": outcome.kernels}
        print(json.dumps(answer, indent=2))
        return 0
    print(outcome.headline)
    for name, result in outcome.kernels.items():
        memory = "DRAM" if outcome.backend == HOST else "card"
        share = (
            f", {result['bandwidth_of_read']:.0%} of {memory} read"
            if name == "matvec_q8_0" and result["bandwidth_of_read"] is not None
            else ""
        )
        print(
            f"  {name:<20} {result['variant']:<15} {result['calls']:>3} calls, checked "
            f"{result['checked']}: {result['median_ms']:.3f} ms, {result['throughput']:,.1f} "
            f"{result['unit']}, {result['bandwidth_gbs']:.1f} GB/s{share}"
        )
    return 0
