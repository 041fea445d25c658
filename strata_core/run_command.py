"""`strata-core run`: plan for this PC, then run the workload on the selected backend's kernel
library (checking every result), or start the engine with `run -- ENGINE ARGS...`."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

import attrs

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
    from .hip.backend import NoGpuRun, open_gpu
    from .host.library import HostLibrary
    from .records import KernelLibrary

    plan = outcome.plan
    workload = profile.load(args.profile)
    gpu = None
    if plan.plugin != "host":
        libraries = outcome.manager.call_each(
            "strata_kernel_library", expected=KernelLibrary, only=(plan.plugin,)
        )
        try:
            gpu = open_gpu(plan.plugin, dict(libraries).get(plan.plugin), plan.device, env)
        except NoGpuRun as why:
            print(f"{why}; the host backend runs the workload", file=sys.stderr)
            plan = _host_plan(outcome, env, workload)
    os.environ.update({k: v for k, v in plan.engine_env().items() if k == "STRATA_HOST_ISA"})
    lib = HostLibrary()
    threads = lib.set_threads(args.threads)
    if gpu is None:
        return _run_on_host(args, env, plan, workload, lib, threads)
    return run_on_gpu(args, plan, workload, gpu, lib)


def run_on_gpu(args: argparse.Namespace, plan, workload, gpu, lib) -> int:
    from .hip.backend import gpu_backend
    from .host.workload import run
    from .tuning.dispatch import TunedDispatch

    kernels = dict(plan.kernels) | {
        "topk": attrs.evolve(
            plan.kernels["topk"],
            variant="radix",
            reason="the HIP library's one top-k kernel (a radix select) serves every band",
        )
    }
    dispatch = TunedDispatch(None, f"{plan.plugin} GEMM")
    try:
        reports = run(
            gpu_backend(gpu.kernels, lib), workload, kernels, dispatch, progress=sys.stderr
        )
    finally:
        gpu.kernels.close()
    results = {name: r.as_dict(0.0) for name, r in reports.items() if r.seconds}
    code = gpu.kernels.code
    if args.json:
        answer = {
            "backend": "hip",
            "plugin": plan.plugin,
            "card": gpu.card.name,
            "target": gpu.card.gfx,
            "code_object": str(code.path),
            "runtime": gpu.runtime_path,
            "workload": workload.name,
            "kernels": results,
        }
        print(json.dumps(answer, indent=2))
        return 0
    print(
        f"GPU backend: {plan.plugin} {code.path.name} on {gpu.card.name} ({gpu.card.gfx}), "
        f"HIP runtime {gpu.runtime_path}; workload {workload.name}; every result checked "
        "against the host backend"
    )
    _print_results(results, share_of_read=False)
    return 0


def _host_plan(outcome: PlanOutcome, env: Mapping[str, str], workload):
    from .host.plugin import host_device
    from .plan import build_plan

    return build_plan(
        outcome.manager,
        host_device(),
        "host",
        outcome.plan.context,
        env,
        outcome.config.env,
        outcome.config.args,
        str(outcome.config_path or "the run config"),
        workload,
    )


def _run_on_host(args, env, plan, workload, lib, threads: int) -> int:
    from .host.platform import blas_version, isa_level
    from .host.workload import host_backend, read_bandwidth, run
    from .tuning.dispatch import TunedDispatch
    from .tuning.lookup import data_dir, decide_host, search_dirs

    dirs = [*search_dirs(None, env, ()), data_dir(env)]
    table = decide_host(isa_level(), blas_version(), dirs)
    for line in table.log:
        print(line, file=sys.stderr)
    verbose = env.get("STRATA_HIPBLASLT_VERBOSE") == "1"
    dispatch = TunedDispatch(table.loaded, "host BLAS", verbose=verbose)
    read_gbs = read_bandwidth(lib)
    reports = run(host_backend(lib), workload, plan.kernels, dispatch, progress=sys.stderr)
    if verbose:
        print(dispatch.summary(), file=sys.stderr)
    results = {name: r.as_dict(read_gbs) for name, r in reports.items() if r.seconds}
    if args.json:
        answer = {
            "backend": "host",
            "library": str(lib.path),
            "isa": lib.isa,
            "threads": threads,
            "read_bandwidth_gbs": round(read_gbs, 2),
            "workload": workload.name,
            "tuning": table.as_dict(),
            "kernels": results,
        }
        print(json.dumps(answer, indent=2))
        return 0
    print(
        f"host backend: {lib.path.name}, {lib.isa}, {threads} threads; DRAM read "
        f"{read_gbs:.1f} GB/s; workload {workload.name}"
    )
    _print_results(results, share_of_read=True)
    return 0


def _print_results(results: Mapping[str, dict], share_of_read: bool) -> None:
    for name, result in results.items():
        share = (
            f", {result['bandwidth_of_read']:.0%} of DRAM read"
            if share_of_read and name == "matvec_q8_0"
            else ""
        )
        print(
            f"  {name:<20} {result['variant']:<15} {result['calls']:>3} calls, checked "
            f"{result['checked']}: {result['median_ms']:.3f} ms, {result['throughput']:,.1f} "
            f"{result['unit']}, {result['bandwidth_gbs']:.1f} GB/s{share}"
        )
