"""`strata-core plan`: the plan for the main card of this PC, or for a named card."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from pathlib import Path

import attrs

from . import answer_cache, archdb, profile
from . import config as run_config
from .claims import Assignment, assign
from .cli import detect, device_choice, warn
from .context import ram_bytes, this_os
from .devices import device_for
from .errors import StrataError
from .files import write_atomic
from .host.plugin import host_device
from .manager import PluginManager
from .plan import Plan, build_plan, declarations, support_notes, with_tuning
from .records import Device, RunContext
from .report import device_dict, explain_text, plan_dict, plan_text
from .resolve import parse_engine_args
from .selection import Selection
from .tuning import versions
from .tuning.lookup import search_dirs

GIB = 1 << 30
#: Engine arguments whose values a user gives after `run --`, which no default overrides.
ENGINE_FLAGS = {"--pcie-frac", "--pipeline-windows", "--ple-io", "--kv"}


@attrs.frozen
class PlanOutcome:
    plan: Plan
    row: dict
    selection: Selection
    warnings: tuple[str, ...]
    manager: PluginManager
    config: run_config.RunConfig
    config_path: Path | None
    no_gpu: str | None = None


def make_plan(
    args: argparse.Namespace, env: Mapping[str, str], engine_args: tuple[str, ...] = ()
) -> PlanOutcome:
    """The plan for the main card, a named card (--device), or the host backend when no AMD
    GPU can run. ``engine_args`` are the user's own engine arguments (they win)."""
    path, config = run_config.find_and_load(args.config, env)
    chosen = env.get("STRATA_ARCH_PLUGIN") or config.arch_plugin
    no_gpu = None
    if args.device:
        manager = PluginManager.discover(env)
        assignments, problems = assign(
            manager, [named_device(args.device, args.integrated)], chosen
        )
        selection = Selection((0,), {}, "--device")
        warnings = [*manager.problems, *problems]
        others: tuple[Device, ...] = ()
        main = assignments[0]
    else:
        manager, _, assignments, selection, warnings = detect(
            args, env, device_choice(args, config), chosen
        )
        if selection.indices:
            main = next(a for a in assignments if a.device.index == selection.indices[-1])
        else:
            no_gpu = f"no AMD GPU to run on ({selection.reason}); the host backend runs"
            host = host_device()
            main = Assignment(host, "host", "host runs on the CPU")
        others = tuple(
            a.device for a in assignments if a.device.visible and a.device is not main.device
        )
    _check_runnable(main, chosen)
    context = RunContext(
        os=args.os or this_os(),
        kv=args.kv or parse_engine_args(config.args, {"--kv"}).get("--kv"),
        pack=args.pack,
        kv_streaming=args.kv_streaming
        or "--kv-resident" in parse_engine_args(config.args, {"--kv-resident"}),
        other_cards=others,
        ram_bytes=ram_bytes(),
        ple_table_bytes=_ple_table_bytes(args, config),
    )
    config_env = dict(config.env)
    if config.tuning.hipblaslt_table is not None:
        config_env.setdefault(
            "STRATA_HIPBLASLT_TABLE", "on" if config.tuning.hipblaslt_table else "off"
        )
    user = dict(env) | parse_engine_args(engine_args, ENGINE_FLAGS)
    plan = build_plan(
        manager,
        main.device,
        main.plugin,
        context,
        user,
        config_env,
        config.args,
        str(path) if path else "the run config",
        profile.load(args.profile),
    )
    if no_gpu is None:
        dirs = search_dirs(config.exe, env, ()) + [Path(d) for d in config.tuning.dirs]
        plan = with_tuning(plan, manager, library_versions(args, env, plan), dirs)
    row = device_dict(main, selection)
    return PlanOutcome(
        plan, row, selection, (*warnings, *plan.warnings), manager, config, path, no_gpu
    )


def run_plan(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    outcome = make_plan(args, env)
    plan, row, selection = outcome.plan, outcome.row, outcome.selection
    notes = (outcome.no_gpu,) if outcome.no_gpu else ()
    if args.json:
        answer = plan_dict(attrs.evolve(plan, warnings=outcome.warnings), row, selection.indices)
        print(json.dumps(answer | {"notes": list(notes)}, indent=2))
        return 0
    warn((*notes, *outcome.warnings))
    if args.explain:
        switches, _ = declarations(outcome.manager, ("core", plan.plugin))
        if args.explain not in switches:
            raise StrataError(f"--explain {args.explain}: no switch of {plan.plugin} has that name")
        print(explain_text(plan, args.explain, switches[args.explain]))
    elif args.toml:
        text = run_config.dumps(
            reproducing_config(
                plan, outcome.config, selection, args.device is None and outcome.no_gpu is None
            )
        )
        if args.output:
            write_atomic(args.output, text)
        else:
            print(text, end="")
    else:
        print(plan_text(plan, row))
    return 0


def library_versions(args: argparse.Namespace, env: Mapping[str, str], plan: Plan) -> dict:
    """hipBLASLt and rocBLAS versions: given on the command line, else probed where a table
    decision needs one, except for a card that is not in this PC."""
    given = {
        "hipblaslt": versions.hipblaslt_number(args.hipblaslt) if args.hipblaslt else None,
        "rocblas": versions.rocblas_version(args.rocblas) if args.rocblas else None,
    }
    values = {n: r.value for n, r in plan.switches.items()}
    needed = {
        "hipblaslt": values["STRATA_HIPBLASLT_TABLE"] == "on"
        or values["STRATA_HIPBLASLT_TUNING"] is not None,
        "rocblas": plan.device.gfx.startswith("gfx103")
        or values["STRATA_ROCBLAS_TUNING"] is not None,
    }
    unknown = versions.LibraryVersion(None, "not needed: no table is asked for")
    probed = dict.fromkeys(given, unknown)
    if args.device:
        probed = dict.fromkeys(
            given, versions.LibraryVersion(None, "not probed: the card is not in this PC")
        )
    elif any(needed[k] and not given[k] for k in given):
        probed = versions.probe(env, float(env.get("STRATA_HIP_PROBE_TIMEOUT", "15")))
    return {k: versions.LibraryVersion(v, "given") if v else probed[k] for k, v in given.items()}


def named_device(gfx: str, integrated: bool) -> Device:
    arch = archdb.lookup(gfx)
    if arch is None:
        raise StrataError(f"--device {gfx}: not a target strata knows ({', '.join(archdb.ARCHS)})")
    return device_for(
        arch.target,
        integrated=integrated or arch.integrated_only,
        evidence="--integrated" if integrated else None,
        seen_by=("--device",),
    )


def _check_runnable(main: Assignment, chosen: str | None) -> None:
    device = main.device
    if chosen and main.plugin != chosen:
        refusal = dict(main.claims).get(chosen)
        if refusal is not None:
            raise StrataError(
                f"{device.name} ({device.gfx}): STRATA_ARCH_PLUGIN={chosen}, which {refusal.reason}"
            )
    if main.plugin is None:
        notes = "".join(f"; {note}" for note in support_notes(device))
        raise StrataError(f"{device.name} ({device.gfx}, {device.family}): {main.reason}{notes}")


def _ple_table_bytes(args: argparse.Namespace, config: run_config.RunConfig) -> int | None:
    if args.ple_table_gib is not None:
        return int(args.ple_table_gib * GIB)
    ple = parse_engine_args(config.args, {"--ple-gguf"}).get("--ple-gguf")
    if ple:
        answer_cache.stated(ple)
    try:
        return os.stat(ple).st_size if ple else None
    except OSError:
        return None


def reproducing_config(
    plan: Plan, config: run_config.RunConfig, selection: Selection, detected: bool
) -> run_config.RunConfig:
    """A run config that gives the same values: every decided switch pinned in ``env``."""
    env = dict(plan.extra_env) | {
        n: r.value for n, r in plan.switches.items() if r.value is not None
    }
    decided = {flag for flag, r in plan.args.items() if r.value is not None}
    kept = _without_flags(config.args, decided)
    args = kept + tuple(
        part for flag, r in plan.args.items() if r.value is not None for part in (flag, r.value)
    )
    gpu = config.gpu
    if detected:
        gpu = selection.indices[0] if len(selection.indices) == 1 else selection.indices
    return attrs.evolve(
        config,
        gpu=gpu,
        env=env,
        args=args,
        gpu_roles={str(k): v for k, v in selection.roles.items()} or config.gpu_roles,
    )


def _without_flags(args: tuple[str, ...], flags: set[str]) -> tuple[str, ...]:
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        flag, eq, _ = arg.partition("=")
        if flag in flags:
            skip = not eq
            continue
        kept.append(arg)
    return tuple(kept)
