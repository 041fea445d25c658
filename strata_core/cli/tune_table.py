"""`strata-core tune` without --switches: a table calibration, of the card's prompt GEMM
library (strata_core.run.card_calibration) or of the host backend's GEMMs
(strata_core.host.tuning): its --case, --tokens and --min-gain read, and the table written
where --output says."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import log
from ..digits import is_digits
from ..errors import StrataError
from ..files import write_atomic
from ..people import counted
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


def parse_tokens(text: str) -> list[int]:
    """The --tokens list: token counts, each once."""
    parts = text.split(",")
    tokens = [int(t) for t in parts] if all(is_digits(t) for t in parts) else []
    if not tokens or min(tokens) <= 0:
        raise StrataError(f"--tokens {text}: expected token counts such as 256,512")
    twice = next((t for i, t in enumerate(tokens) if t in tokens[:i]), None)
    if twice is not None:
        raise StrataError(f"--tokens {text}: {twice} is given twice; a table has one row a shape")
    return tokens


def table_min_gain(given: float | None) -> float:
    """--min-gain of a table: at least 1 (default: the tables' MIN_GAIN)."""
    if given is None:
        return tables.MIN_GAIN
    if not (math.isfinite(given) and given >= 1):
        raise StrataError(f"--min-gain {given}: a number of at least 1")
    return given


def calibrate_table(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Calibrate the card's prompt GEMM library, or the host backend's (--host, or where no
    card runs), and write the table."""
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
    except StrataError as error:
        sys.stdout.write(text)
        raise StrataError(f"tune: the measured table is on stdout instead: {error}") from None
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
    refuse_cases_past_memory(tunable.shapes)
    target = table_target(args.output, env, HOST.file_name(tunable.arch, tunable.version))
    log.info(
        f"tune: host backend, {tunable.arch}, {tunable.version}: "
        f"{counted(len(tunable.cases()), 'case')}, {counted(args.repeats, 'round')} each"
    )
    threads = measured_threads(env)
    log.info(f"tune: host threads: {threads.summary()} ({threads.reason})")
    table = calibrate_host(tunable, threads, args.repeats, min_gain, progress_line)
    return write_table(target, render(table), "", names_a_folder(args.output))


def refuse_cases_past_memory(cases: Sequence[tuple[Any, ...]]) -> None:
    """Refuse, before anything is drawn, a case (T, op, N, K, dtype) whose arrays would not
    fit in this machine's memory (as a profile's workload is refused)."""
    from ..answer_cache import Recorder
    from ..host.tuning import case_bytes
    from ..plan.context import ram_bytes
    from ..plan.profile import GIB

    ram = ram_bytes(Recorder())
    for case in cases:
        need = case_bytes(case)
        if ram is not None and need > ram:
            raise StrataError(
                f"tune: the case {','.join(map(str, case))} takes about {need / GIB:,.0f} GiB "
                f"of memory, more than this machine's {ram / GIB:.1f} GiB"
            )


def progress_line(line: str) -> None:
    """A calibration's progress line, said as it comes."""
    log.info(line, kind="progress")


def card_plan(args: argparse.Namespace, env: Mapping[str, str]) -> Plan | None:
    """The plan of a run on this PC's card, or None where the host backend runs."""
    from ..gpu.backends import BACKENDS
    from ..plan.detection import PlanRequest
    from ..plan.pipeline import make_plan

    request = PlanRequest(env=env, sysfs=args.sysfs, profile=args.profile, for_run=True)
    plan = make_plan(request).plan
    return plan if plan.backend in BACKENDS else None


def tune_card(
    args: argparse.Namespace,
    env: Mapping[str, str],
    plan: Plan,
    cases: list[tuple[Any, ...]] | None,
    tokens: list[int] | None,
    min_gain: float,
) -> int:
    """Calibrate the plan's prompt GEMM library on its card and write its table."""
    from ..run import calibrate_card, card_calibration

    calibration = card_calibration(plan, cases, tokens, env)
    refuse_cases_past_memory(calibration.cases)
    target = table_target(args.output, env, calibration.file_name)
    text = calibrate_card(calibration, args.repeats, min_gain, progress_line)
    library = calibration.library
    taken_by = "" if library == "rocblas" else f"; STRATA_{library.upper()}_TABLE=on takes it"
    return write_table(target, text, taken_by, names_a_folder(args.output))
