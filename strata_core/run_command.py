"""`strata-core run`: plan for this PC, then run the workload on the selected backend's kernel
library (checking every result), or start the engine with `run -- ENGINE ARGS...`."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

from .cli import warn
from .errors import StrataError
from .plan_command import PlanOutcome, make_plan


def run(args: argparse.Namespace, env: Mapping[str, str], engine: Sequence[str]) -> int:
    outcome = make_plan(args, env, tuple(engine[1:]))
    if outcome.no_gpu:
        print(outcome.no_gpu, file=sys.stderr)
    warn(outcome.warnings)
    for line in outcome.plan.log:
        print(line, file=sys.stderr)
    if engine:
        return start_engine(outcome, env, engine)
    return run_workload(args, env, outcome)


def start_engine(outcome: PlanOutcome, env: Mapping[str, str], engine: Sequence[str]) -> int:
    """Start the engine with the resolved environment and arguments; its exit status is ours."""
    plan = outcome.plan
    command = [*engine, *plan.engine_args()]
    try:
        child = subprocess.run(command, env=dict(env) | plan.engine_env())
    except OSError as exc:
        raise StrataError(f"cannot start the engine {engine[0]}: {exc.strerror or exc}") from None
    if child.returncode < 0:
        return 128 + -child.returncode
    return child.returncode


def run_workload(args: argparse.Namespace, env: Mapping[str, str], outcome: PlanOutcome) -> int:
    from . import profile
    from .host.library import HostLibrary
    from .host.platform import blas_version, isa_level
    from .host.workload import read_bandwidth, run
    from .tuning.dispatch import TunedDispatch
    from .tuning.lookup import data_dir, decide_host, search_dirs

    plan = outcome.plan
    workload = profile.load(args.profile)
    if plan.plugin != "host":
        print(
            f"{plan.plugin} carries no kernel library in this version; the host backend runs "
            "the workload",
            file=sys.stderr,
        )
        from .host.plugin import host_device
        from .plan import build_plan

        plan = build_plan(
            outcome.manager,
            host_device(),
            "host",
            plan.context,
            env,
            outcome.config.env,
            outcome.config.args,
            str(outcome.config_path or "the run config"),
            workload,
        )
    os.environ.update({k: v for k, v in plan.engine_env().items() if k == "STRATA_HOST_ISA"})
    lib = HostLibrary()
    threads = lib.set_threads(args.threads)
    dirs = [*search_dirs(None, env, ()), data_dir(env)]
    table = decide_host(isa_level(), blas_version(), dirs)
    for line in table.log:
        print(line, file=sys.stderr)
    verbose = env.get("STRATA_HIPBLASLT_VERBOSE") == "1"
    dispatch = TunedDispatch(table.loaded, "host BLAS", verbose=verbose)
    read_gbs = read_bandwidth(lib)
    reports = run(lib, workload, plan.kernels, dispatch, progress=sys.stderr)
    if verbose:
        print(dispatch.summary(), file=sys.stderr)
    results = {name: r.as_dict(read_gbs) for name, r in reports.items() if r.seconds}
    if args.json:
        print(
            json.dumps(
                {
                    "backend": "host",
                    "library": str(lib.path),
                    "isa": lib.isa,
                    "threads": threads,
                    "read_bandwidth_gbs": round(read_gbs, 2),
                    "workload": workload.name,
                    "tuning": table.as_dict(),
                    "kernels": results,
                },
                indent=2,
            )
        )
        return 0
    print(
        f"host backend: {lib.path.name}, {lib.isa}, {threads} threads; DRAM read "
        f"{read_gbs:.1f} GB/s; workload {workload.name}"
    )
    for name, result in results.items():
        share = f", {result['bandwidth_of_read']:.0%} of DRAM read" if name == "matvec_q8_0" else ""
        print(
            f"  {name:<20} {result['variant']:<11} {result['calls']:>3} calls, checked "
            f"{result['checked']}: {result['median_ms']:.3f} ms, {result['throughput']:,.1f} "
            f"{result['unit']}, {result['bandwidth_gbs']:.1f} GB/s{share}"
        )
    return 0
