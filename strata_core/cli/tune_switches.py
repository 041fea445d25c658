"""`strata-core tune --switches`: each calibratable switch measured on the host backend
(strata_core.tuning.switch_trials, on strata_core.host.switch_bench), and the clear winners
written into the run config's env, or shown as a diff (--dry-run)."""

from __future__ import annotations

import argparse
import difflib
import math
import sys
from collections.abc import Mapping
from pathlib import Path

from .. import log
from ..errors import StrataError
from ..files import resolved, write_atomic
from ..plan.config import with_env

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..plan.plan import HostRun


def host_run(args: argparse.Namespace, env: Mapping[str, str], config: Path | None) -> HostRun:
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
    try:  # a name that can never be written (a loop of links) is refused before measuring
        resolved(path, follow_last=True)
    except OSError as exc:
        raise StrataError(
            f"{path}: cannot write ({exc.strerror or exc}); nothing was measured"
        ) from None
    if path.exists():  # refused as plan refuses it (a folder, a malformed config) before measuring
        run_config.load(path)
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
