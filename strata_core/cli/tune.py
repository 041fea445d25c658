"""`strata-core tune`: calibrate a card's or the host backend's GEMMs and write a table, or
measure the calibratable switches (--switches)."""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import log
from ..digits import is_digits
from ..errors import StrataError
from ..files import write_atomic
from ..people import counted
from ..plan.config import with_env
from ..tuning import tables
from ..tuning.kinds import HOST, OP_PATTERN
from ..tuning.tables import TableError, lookup_note, parse, render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..plan.plan import Plan


def parse_case(text: str) -> tuple[Any, ...]:
    """``T,op,N,K,dtype``: the column order of a table's --case (awk's $1,$5,$2,$3,$4)."""
    parts = text.split(",")
    if (
        len(parts) != 5
        or not all(is_digits(p) and int(p) > 0 for p in (parts[0], *parts[2:4]))
        or parts[4] not in ("f32", "f16")
    ):
        raise StrataError(
            f"--case {text}: expected T,op,N,K,dtype with dtype f32 or f16, "
            "such as 512,gate_up,8192,2048,f32"
        )
    if not re.fullmatch(OP_PATTERN, parts[1]):
        raise StrataError(
            f"--case {text}: op must be a lower-case name such as gate_up, got {parts[1]!r}"
        )
    return int(parts[0]), parts[1], int(parts[2]), int(parts[3]), parts[4]


def parse_cases(texts: list[str]) -> list[tuple[Any, ...]]:
    """The --case list, each shape once (a table has one row a shape)."""
    cases: dict[tuple[Any, ...], str] = {}
    for text in texts:
        case = parse_case(text)
        if case in cases:
            raise StrataError(f"--case {text} is given twice; a table has one row a shape")
        cases[case] = text
    return list(cases)


def table_min_gain(given: float | None) -> float:
    if given is None:
        return tables.MIN_GAIN
    if not (math.isfinite(given) and given >= 1):
        raise StrataError(f"--min-gain {given}: a number of at least 1")
    return given


def run_tune(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    if args.switches:
        return run_switch_trials(args, env)
    if args.repeats < 3:
        raise StrataError(f"--repeats {args.repeats}: at least 3, for a median")
    min_gain = table_min_gain(args.min_gain)
    cases = parse_cases(args.case) if args.case else None
    tokens = parse_tokens(args.tokens) if args.tokens else None
    plan = None if args.host else card_plan(args, env)
    if plan is not None:
        return tune_card(args, env, plan, cases, tokens, min_gain)
    if args.profile is not None:
        raise StrataError(
            "--profile gives the shapes of a card's calibration or of tune --switches; "
            "the host backend's calibration takes --case"
        )
    return tune_host(args, env, cases, tokens, min_gain)


def parse_tokens(text: str) -> list[int]:
    parts = text.split(",")
    tokens = [int(t) for t in parts] if all(is_digits(t) for t in parts) else []
    if not tokens or min(tokens) <= 0:
        raise StrataError(f"--tokens {text}: expected token counts such as 256,512")
    twice = next((t for i, t in enumerate(tokens) if t in tokens[:i]), None)
    if twice is not None:
        raise StrataError(f"--tokens {text}: {twice} is given twice; a table has one row a shape")
    return tokens


def names_a_folder(output: str | None) -> bool:
    """Whether a calibration's --output asks for a folder, which is made where missing (none
    given: the default folder)."""
    return output is None or output.endswith(os.sep)


def table_target(output: str | None, env: Mapping[str, str], name: str) -> Path:
    """Where a calibration writes the table named ``name``: --output (a folder where it is
    one or ends in a slash, else a file of any name), else the first of $STRATA_TUNING_DIR,
    else the data folder."""
    from ..tuning.lookup import data_dir

    if output is None:
        folder = (
            Path(env["STRATA_TUNING_DIR"].split(os.pathsep)[0])
            if env.get("STRATA_TUNING_DIR")
            else data_dir(env)
        )
        return folder / name
    if output.endswith(os.sep) or Path(output).is_dir():
        return Path(output) / name
    return Path(output)


def write_table(target: Path, text: str, taken_by: str, make_folders: bool = False) -> int:
    """Write a calibrated table, which must be one that ``table check`` takes; its folder is
    made only where ``make_folders`` (the default folder, or one --output names)."""
    try:
        table = parse(text, target)
    except TableError as error:
        sys.stdout.write(text)
        raise StrataError(
            f"tune: the measured table is refused ({error.problems[0]}); it is on stdout, "
            "nothing was written"
        ) from None
    try:
        write_atomic(target, text, make_folders)
    except StrataError:
        sys.stdout.write(text)
        log.warning("tune: the table could not be written; it is on stdout instead")
        raise
    how = lookup_note(target, table) or taken_by
    rows = counted(len(table.rows), "row")
    log.info(f"tune: wrote {rows} ({table.tuned_rows} tuned) to {target}{how}")
    return 0


def tune_host(
    args: argparse.Namespace,
    env: Mapping[str, str],
    cases: list[tuple[Any, ...]] | None,
    tokens: list[int] | None,
    min_gain: float,
) -> int:
    """Calibrate the host backend's prompt GEMMs and write its table."""
    from ..host.tuning import calibrate_host, measured_threads, tunable_for

    tunable = tunable_for(cases, tokens)
    target = table_target(args.output, env, HOST.file_name(tunable.arch, tunable.version))
    log.info(
        f"tune: host backend, {tunable.arch}, {tunable.version}: "
        f"{counted(len(tunable.cases()), 'case')}, {counted(args.repeats, 'round')} each"
    )
    threads = measured_threads(env)
    log.info(f"tune: host threads: {threads.summary()} ({threads.reason})")
    table = calibrate_host(tunable, threads, args.repeats, min_gain, progress_line)
    return write_table(target, render(table), "", names_a_folder(args.output))


def progress_line(line: str) -> None:
    """A calibration's progress line, said as it comes."""
    log.info(line, kind="progress")


def card_plan(args: argparse.Namespace, env: Mapping[str, str]) -> Plan | None:
    """The plan of a run on this PC's card, or None where the host backend runs."""
    from ..plan.detection import PlanRequest
    from ..plan.pipeline import make_plan

    request = PlanRequest(env=env, sysfs=args.sysfs, profile=args.profile, for_run=True)
    plan = make_plan(request).plan
    return None if plan.backend == "host" else plan


def tune_card(
    args: argparse.Namespace,
    env: Mapping[str, str],
    plan: Plan,
    cases: list[tuple[Any, ...]] | None,
    tokens: list[int] | None,
    min_gain: float,
) -> int:
    """Calibrate the plan's prompt GEMM library on its card and write its table."""
    from ..run.card_calibration import calibrate_card, card_calibration

    calibration = card_calibration(plan, cases, tokens, env)
    target = table_target(args.output, env, calibration.file_name)
    text = calibrate_card(calibration, args.repeats, min_gain, progress_line)
    library = calibration.library
    taken_by = "" if library == "rocblas" else f"; STRATA_{library.upper()}_TABLE=on takes it"
    return write_table(target, text, taken_by, names_a_folder(args.output))


def host_run(args: argparse.Namespace, env: Mapping[str, str], config: Path | None) -> Any:
    """The host backend of this PC's plan (with the run config ``config``, where there is
    one yet): its instruction set and kernels. The cards the config chooses are not asked
    for: the host backend needs none of them."""
    from ..plan.detection import PlanRequest
    from ..plan.pipeline import make_plan
    from ..plan.selection import DeviceChoice

    request = PlanRequest(
        env=env,
        config=config,
        sysfs=args.sysfs,
        choice=DeviceChoice(),
        profile=args.profile,
        for_run=True,
    )
    host = make_plan(request).plan.host
    assert host is not None  # a plan for a run has one
    return host


def run_switch_trials(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Measure each calibratable switch on the host backend in alternating on/off pairs and
    write the clear winners into the run config's env (or show the change: --dry-run)."""
    from ..api.records import RunContext
    from ..host.switch_bench import HostTrialBench
    from ..plan import config as run_config
    from ..plan import profile
    from ..plan.context import this_os
    from ..tuning.switch_trials import MIN_GAIN, run_trials

    min_gain = MIN_GAIN if args.min_gain is None else args.min_gain
    budget = 10.0 if args.budget is None else args.budget
    if not (math.isfinite(min_gain) and min_gain > 1):
        raise StrataError(f"--min-gain {args.min_gain}: above 1 (1.03 is 3%)")
    if not (math.isfinite(budget) and budget > 0):
        raise StrataError(f"--budget {args.budget}: a positive number of seconds")
    workload = profile.load(args.profile)
    context = RunContext(os=args.os or this_os(), kv_streaming=args.kv_streaming)
    path = run_config.find(args.config, env) or Path("strata.toml")
    if path.is_file():
        run_config.load(path)  # a malformed config is refused before anything is measured
    host = host_run(args, env, path if path.is_file() else None)
    bench = HostTrialBench(host.isa, context, workload)
    log.info(
        f"tune: measuring on the host backend ({bench.lib.path.name}, {bench.lib.isa}); the "
        f"engine on a GPU may differ. A switch is kept when it is {(min_gain - 1) * 100:.0f}% "
        f"faster by more than its spread; at most {budget:g} s a switch"
    )
    results = run_trials(bench, context, args.repeats, min_gain, budget)
    for result in results:
        log.info(f"tune: {result.reason}", kind="switch", kept=result.keep)
    won = {r.switch: r.value for r in results if r.keep}
    if not won:
        log.info(f"tune: nothing to write into {path}")
        return 0
    return write_winners(path, won, args.dry_run)


def write_winners(path: Path, won: Mapping[str, str], dry_run: bool) -> int:
    """Set the winning switches in the run config at ``path`` (its text kept otherwise), or
    with ``dry_run`` show the change as a diff on stdout."""
    old, new = with_env(path, won, HOST_MEASURED)
    if dry_run:
        sys.stdout.writelines(
            difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True), str(path), str(path)
            )
        )
        log.info(f"tune: --dry-run: the change to {path} is on stdout; nothing was written")
        return 0
    try:
        write_atomic(path, new)
    except StrataError:
        sys.stdout.writelines(f"{name} = {value!r}\n" for name, value in won.items())
        log.warning(f"tune: the winners could not be written; put them in {path}'s [env]")
        raise
    log.info(
        f"tune: wrote {', '.join(f'{k}={v}' for k, v in won.items())} into {path}, measured on "
        "the host backend (CPU), not on a GPU"
    )
    return 0


#: what a TOML run config says beside a switch that tune --switches wrote
HOST_MEASURED = "strata-core tune --switches: measured on the host backend (CPU), not on a GPU"
