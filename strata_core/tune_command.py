"""`strata-core tune` (calibrate the host backend and write a table) and
`strata-core table check` (validate tables)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from functools import partial
from pathlib import Path

from .errors import StrataError
from .files import write_atomic
from .tuning.tables import TableError, read, render


def parse_case(text: str) -> tuple:
    """``T,op,N,K,dtype``: the column order of a table's --case (awk's $1,$5,$2,$3,$4)."""
    parts = text.split(",")
    if (
        len(parts) != 5
        or not all(p.isdigit() and int(p) > 0 for p in (parts[0], *parts[2:4]))
        or parts[4] not in ("f32", "f16")
    ):
        raise StrataError(
            f"--case {text}: expected T,op,N,K,dtype with dtype f32 or f16, "
            "such as 512,gate_up,8192,2048,f32"
        )
    return int(parts[0]), parts[1], int(parts[2]), int(parts[3]), parts[4]


def run_tune(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    if args.switches:
        return run_switch_trials(args, env)
    from .host.tuning import DEFAULT_TOKENS, HostGemmTunable, cases_for
    from .tuning.calibrate import calibrate
    from .tuning.lookup import data_dir

    if args.case:
        cases = [parse_case(c) for c in args.case]
    else:
        try:
            tokens = [int(t) for t in args.tokens.split(",")] if args.tokens else DEFAULT_TOKENS
        except ValueError:
            raise StrataError(
                f"--tokens {args.tokens}: expected token counts such as 256,512"
            ) from None
        cases = cases_for(tokens)
    if args.repeats < 3:
        raise StrataError(f"--repeats {args.repeats}: at least 3, for a median")
    if args.min_gain < 1:
        raise StrataError(f"--min-gain {args.min_gain}: at least 1")
    tunable = HostGemmTunable(cases)
    print(
        f"tune: host backend, {tunable.arch}, {tunable.version}: {len(cases)} cases, "
        f"{args.repeats} rounds each",
        file=sys.stderr,
    )
    table, _ = calibrate(tunable, args.repeats, args.min_gain, progress=sys.stderr)
    target = args.output
    if target is None:
        folder = (
            Path(env["STRATA_TUNING_DIR"].split(":")[0])
            if env.get("STRATA_TUNING_DIR")
            else data_dir(env)
        )
        target = folder / table.kind.file_name(table.arch, table.version)
    write_atomic(target, render(table))
    tuned = sum(row.tuned for row in table.rows)
    print(f"tune: wrote {len(table.rows)} rows ({tuned} tuned) to {target}", file=sys.stderr)
    return 0


def run_table_check(args: argparse.Namespace) -> int:
    failed = False
    for path in args.files:
        try:
            table = read(path)
        except TableError as error:
            failed = True
            for problem in error.problems:
                print(problem)
            continue
        tuned = sum(row.tuned for row in table.rows)
        print(
            f"{path}: ok: {table.kind.library} table for {table.arch}, version "
            f"{table.version}, {len(table.rows)} rows ({tuned} tuned)"
        )
    return 1 if failed else 0


def run_switch_trials(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Measure each calibratable switch on the host backend in alternating on/off pairs."""
    import attrs
    import numpy as np

    from . import config as run_config
    from . import profile
    from .context import this_os
    from .host.library import HostLibrary
    from .host.plugin import host_device, strata_select_kernels
    from .records import RunContext
    from .tuning.switch_trials import TRIALS, TrialResult, alternate, verdict

    workload = profile.load(args.profile)
    context = RunContext(os=args.os or this_os(), kv_streaming=args.kv_streaming)
    path = run_config.find(args.config, env) or Path("strata.toml")
    config = run_config.load(path) if path.is_file() else run_config.RunConfig()
    lib = HostLibrary()
    rng = np.random.default_rng(0)
    inputs = {
        "router_topk": rng.standard_normal(
            (workload.prompt_tokens, workload.experts), dtype=np.float32
        ),
        "topk": rng.standard_normal(workload.context_cells, dtype=np.float32),
    }
    calls = {
        "router_topk": lambda variant: lib.router_topk(
            inputs["router_topk"], workload.experts_per_token, variant
        ),
        "topk": lambda variant: lib.topk(inputs["topk"], workload.cells_kept, variant),
    }
    calls["topk_prompt"] = calls["topk"]
    results = []
    for trial in TRIALS:
        never = trial.never(context)
        if never or trial.op is None:
            why = (
                never
                or "only the engine on a GPU can measure it; the host backend has no such path"
            )
            results.append(
                TrialResult(trial.switch, trial.value, None, False, f"{trial.switch}: {why}")
            )
            continue
        pick = {}
        for state in ({}, {trial.switch: trial.value}):
            chosen = strata_select_kernels(host_device(), context, state, workload)
            pick[bool(state)] = next(c.variant for c in chosen if c.op == trial.op)
        if pick[False] == pick[True]:
            results.append(
                TrialResult(
                    trial.switch,
                    trial.value,
                    None,
                    False,
                    f"{trial.switch}={trial.value}: the host backend runs "
                    f"{trial.op} the same way ({pick[False]}) at this workload",
                )
            )
            continue
        call = calls[trial.op]
        ratio = alternate(partial(call, pick[False]), partial(call, pick[True]), args.repeats)
        results.append(verdict(trial, ratio))
    for result in results:
        print(f"tune: {result.reason}", file=sys.stderr)
    won = {r.switch: r.value for r in results if r.keep}
    if won:
        write_atomic(path, run_config.dumps(attrs.evolve(config, env=dict(config.env) | won)))
        print(
            f"tune: wrote {', '.join(f'{k}={v}' for k, v in won.items())} into {path}",
            file=sys.stderr,
        )
    return 0
