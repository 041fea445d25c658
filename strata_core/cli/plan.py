"""`strata-core plan`: the plan for the main card of this PC, or for a named card."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

import attrs

from .. import log, people
from ..answer_cache import Recorder
from ..api.switches import Switch
from ..errors import StrataError
from ..plan import config as run_config
from ..plan.pipeline import make_plan
from ..plan.plan import Plan, declarations
from ..plan.resolve import without_flags
from ..plan.selection import Selection
from .answers import device_dict, dumps, plan_answer
from .options import detection_options, ignored_planning_options, planning_options
from .report import explain_text, plan_text, warn
from .request import plan_request


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """What the answer is (text, --json, --toml with --output, --explain), and what it plans
    for."""
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print JSON")
    output.add_argument(
        "--toml", action="store_true", help="print a run config that reproduces this plan"
    )
    output.add_argument("--explain", metavar="NAME", help="say where one value came from")
    parser.add_argument(
        "--output",
        metavar="FILE",
        type=Path,
        help="with --toml: write the run config to FILE (atomically; an existing FILE only "
        "with --force, which keeps its owner and mode)",
    )
    parser.add_argument(
        "--force", action="store_true", help="with --output: replace an existing FILE"
    )
    planning_options(parser)
    detection_options(parser)


def ignored_options(args: argparse.Namespace) -> list[str]:
    """Options that would otherwise be ignored in silence."""
    problems = []
    if args.output is not None and not args.toml:
        problems.append("--output writes the run config of --toml; give --toml too")
    if args.force and args.output is None:
        problems.append("--force lets --output replace a file; give --output too")
    problems += ignored_planning_options(args)
    if args.explain is not None and not args.explain.strip():
        problems.append("--explain needs a switch name, such as STRATA_HIP_WMMA or --pcie-frac")
    return problems


def run(args: argparse.Namespace, env: Mapping[str, str], recorder: Recorder | None = None) -> int:
    """Say what would run and why, as text, JSON, a run config, or one value explained."""
    request = plan_request(args, env, recorder, args.engine)
    outcome = make_plan(request)
    plan, selection = outcome.plan, outcome.selection
    row = device_dict(outcome.assignment, selection, plan.context.os, request.env)
    notes = outcome.notes
    if args.json:
        print(dumps(plan_answer(plan, row, selection.indices, notes)))
        return 0
    switches, _ = declarations(outcome.manager, ("core", plan.plugin))
    explained = switch_named(args.explain, switches, plan.plugin) if args.explain else None
    for note in notes:
        log.info(note, kind="note")
    warn(outcome.warnings)
    if explained:
        people.show(explain_text(plan, explained, switches[explained], people.width()))
    elif args.toml:
        text = toml_header(plan, outcome.no_gpu) + run_config.dumps(
            reproducing_config(
                plan, outcome.config, selection, args.device is None and outcome.no_gpu is None
            )
        )
        if args.output:
            from ..files import Exists, write_atomic

            try:
                write_atomic(args.output, text, replace=args.force)
            except Exists:
                raise StrataError(
                    f"--output {args.output}: the file exists; --force replaces it (its "
                    "comments and all)"
                ) from None
            log.info(f"wrote {args.output}")
        else:
            print(text, end="")
    else:
        people.show(plan_text(plan, row, args.verbose, people.width()))
    return 0


def toml_header(plan: Plan, no_gpu: str | None) -> str:
    """The comment a written run config starts with: what it was planned for."""
    d = plan.device
    what = f"{d.name} ({d.gfx}) on {plan.context.os.capitalize()}"
    lines = [f"# strata run config from `strata-core plan --toml`: {what}"]
    if no_gpu:
        lines.append(f"# {no_gpu}: nothing is decided for a card")
    return "".join(f"{people.one_line(line)}\n" for line in lines)  # a name ends no comment


def switch_named(name: str, switches: Mapping[str, Switch], plugin: str) -> str:
    """The switch ``name`` means, in any case; an unknown name suggests the closest."""
    by_folded = {known.casefold(): known for known in switches}
    if name.casefold() in by_folded:
        return by_folded[name.casefold()]
    import difflib

    close = difflib.get_close_matches(name.casefold(), list(by_folded), n=1, cutoff=0.8)
    hint = f"; did you mean {by_folded[close[0]]}?" if close else ""
    raise StrataError(f"--explain {name}: no switch of {plugin} has that name{hint}")


def reproducing_config(
    plan: Plan, config: run_config.RunConfig, selection: Selection, detected: bool
) -> run_config.RunConfig:
    """A run config that gives the same values: every decided switch pinned in ``env``, and
    the run's facts in the page's keys ("backend", "gpu", the KV cache in "args"), so that a
    server reading it runs the cards and KV cache the plan is for."""
    env = dict(plan.extra_env) | {
        n: r.value for n, r in plan.switches.items() if r.value is not None
    }
    decided = {flag for flag, r in plan.args.items() if r.value is not None}
    kept = without_flags(config.args, decided)
    args = kept + tuple(
        part for flag, r in plan.args.items() if r.value is not None for part in (flag, r.value)
    )
    kv = plan.facts.get("kv")
    if kv is not None and kv.value and kv.source != "config":
        args = without_flags(args, {"--kv"}) + ("--kv", kv.value)
    gpu, backend = config.gpu, config.backend
    if detected:
        gpu = selection.indices[0] if len(selection.indices) == 1 else selection.indices
        backend = plan.backend
    return attrs.evolve(
        config,
        gpu=gpu,
        backend=backend,
        env=env,
        args=args,
        gpu_roles={str(k): v for k, v in selection.roles.items()} or config.gpu_roles,
    )
