"""`strata-core tune` (calibrate the host backend and write a table) and
`strata-core table check` (validate tables)."""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Mapping
from functools import partial
from pathlib import Path

from . import log
from .errors import StrataError
from .files import write_atomic
from .tuning.tables import HOST, TableError, read, render


def parse_case(text: str) -> tuple:
    """``T,op,N,K,dtype``: the column order of a table's --case (awk's $1,$5,$2,$3,$4)."""
    parts = text.split(",")
    if (
        len(parts) != 5
        or not all(p.isdecimal() and int(p) > 0 for p in (parts[0], *parts[2:4]))
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
    min_gain = 1.05 if args.min_gain is None else args.min_gain
    if min_gain < 1:
        raise StrataError(f"--min-gain {args.min_gain}: at least 1")
    tunable = HostGemmTunable(cases)
    name = HOST.file_name(tunable.arch, tunable.version)
    target = args.output
    if target is None:
        folder = (
            Path(env["STRATA_TUNING_DIR"].split(":")[0])
            if env.get("STRATA_TUNING_DIR")
            else data_dir(env)
        )
        target = folder / name
    elif target.is_dir():
        target = target / name
    elif target.name != name:
        raise StrataError(
            f"--output {target}: the lookup takes this machine's table only as {name}; "
            "name the file so, or give its folder"
        )
    log.info(
        f"tune: host backend, {tunable.arch}, {tunable.version}: {len(cases)} cases, "
        f"{args.repeats} rounds each"
    )
    table, _ = calibrate(tunable, args.repeats, min_gain, progress=True)
    try:
        write_atomic(target, render(table))
    except StrataError:
        sys.stdout.write(render(table))
        log.warning("tune: the table could not be written; it is on stdout instead")
        raise
    tuned = sum(row.tuned for row in table.rows)
    log.info(f"tune: wrote {len(table.rows)} rows ({tuned} tuned) to {target}")
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
        name = table.kind.file_name(table.arch, table.version)
        if path.name != name:
            failed = True
            print(
                f"{path}: its header names {table.kind.magic} {table.arch} {table.version}, "
                f"so the lookup takes it only as {name}"
            )
            continue
        tuned = sum(row.tuned for row in table.rows)
        print(
            f"{path}: ok: {table.kind.library} table for {table.arch}, version "
            f"{table.version}, {len(table.rows)} rows ({tuned} tuned)"
        )
    return 1 if failed else 0


def run_switch_trials(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Measure each calibratable switch on the host backend in alternating on/off pairs and
    write the clear winners into the run config's env (or show the change: --dry-run)."""
    import numpy as np

    from . import config as run_config
    from . import profile
    from .context import this_os
    from .host.library import HostLibrary
    from .host.plugin import host_device, strata_select_kernels
    from .records import RunContext
    from .tuning.switch_trials import MIN_GAIN, TRIALS, TrialResult, alternate, verdict

    min_gain = MIN_GAIN if args.min_gain is None else args.min_gain
    budget = 10.0 if args.budget is None else args.budget
    if min_gain <= 1:
        raise StrataError(f"--min-gain {args.min_gain}: above 1 (1.03 is 3%)")
    if not budget > 0:
        raise StrataError(f"--budget {args.budget}: a positive number of seconds")
    workload = profile.load(args.profile)
    context = RunContext(os=args.os or this_os(), kv_streaming=args.kv_streaming)
    path = run_config.find(args.config, env) or Path("strata.toml")
    if path.is_file():
        run_config.load(path)  # a malformed config is refused before anything is measured
    lib = HostLibrary()
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((workload.prompt_tokens, workload.experts), dtype=np.float32)
    scores = rng.standard_normal(workload.context_cells, dtype=np.float32)
    k = workload.experts_per_token

    def router(variant: str) -> object:
        return lib.router_topk(logits, k, variant)

    def topk(variant: str) -> object:
        return lib.topk(scores, workload.cells_kept, variant)

    calls = {"router_topk": router, "topk": topk, "topk_prompt": topk}
    log.info(
        f"tune: measuring on the host backend ({lib.path.name}, {lib.isa}); the engine on a "
        f"GPU may differ. A switch is kept when it is {(min_gain - 1) * 100:.0f}% faster by "
        f"more than its spread; at most {budget:g} s a switch"
    )
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
            why = f"the host backend runs {trial.op} the same way ({pick[False]}) at this workload"
            results.append(
                TrialResult(
                    trial.switch, trial.value, None, False, f"{trial.switch}={trial.value}: {why}"
                )
            )
            continue
        call = calls[trial.op]
        measured = alternate(
            partial(call, pick[False]),
            partial(call, pick[True]),
            args.repeats,
            min_gain,
            budget,
        )
        results.append(verdict(trial, measured, min_gain))
    for result in results:
        log.info(f"tune: {result.reason}", kind="switch", kept=result.keep)
    won = {r.switch: r.value for r in results if r.keep}
    if not won:
        log.info(f"tune: nothing to write into {path}")
        return 0
    old, new = with_env(path, won)
    if args.dry_run:
        sys.stdout.writelines(
            difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True), str(path), str(path)
            )
        )
        return 0
    try:
        write_atomic(path, new)
    except StrataError:
        sys.stdout.writelines(f"{name} = {value!r}\n" for name, value in won.items())
        log.warning(f"tune: the winners could not be written; put them in {path}'s [env]")
        raise
    log.info(f"tune: wrote {', '.join(f'{k}={v}' for k, v in won.items())} into {path}")
    return 0


def with_env(path: Path, values: Mapping[str, str]) -> tuple[str, str]:
    """The run config's text before and after setting ``values`` in its env, everything else
    kept: comments, order and formatting (tomlkit), or the server JSON's keys in order."""
    import tomlkit

    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    if path.suffix == ".json":
        data = json.loads(old) if old else {}
        data.setdefault("env", {}).update(values)
        return old, json.dumps(data, indent=2) + "\n"
    document = tomlkit.parse(old)
    if "env" not in document:
        document["env"] = tomlkit.table()
    table = document["env"]
    for name, value in values.items():
        table[name] = value  # type: ignore[index]
    return old, tomlkit.dumps(document)
