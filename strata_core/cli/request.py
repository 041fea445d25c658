"""The PlanRequest of a `plan`, `run`, `devices` or `env` command line, read once from its
options (strata_core.cli.options), the environment and the answer cache's recorder."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

from ..answer_cache import Recorder

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on a command's path
if TYPE_CHECKING:
    from ..plan.detection import PlanRequest


def plan_request(
    args: argparse.Namespace,
    env: Mapping[str, str],
    recorder: Recorder | None,
    engine: Sequence[str] | None = None,
) -> PlanRequest:
    """The request of a `plan`, `run`, `devices` or `env` command line, read once."""
    from ..plan.detection import PlanRequest
    from ..plan.selection import DeviceChoice, parse_gpus, parse_roles

    choice = None
    if args.gpu is not None or args.gpus is not None or args.gpu_roles is not None:
        choice = DeviceChoice(
            gpu=args.gpu,
            gpus=parse_gpus(args.gpus) if args.gpus is not None else None,
            roles=parse_roles(args.gpu_roles) if args.gpu_roles is not None else {},
        )
    planning = args.command in ("plan", "run")
    if planning and (args.hipblaslt or args.rocblas):
        # checked here, so that a plan that needs no version refuses a bad one too
        from ..tuning.versions import hipblaslt_number, rocblas_version

        if args.hipblaslt:
            hipblaslt_number(args.hipblaslt)
        if args.rocblas:
            rocblas_version(args.rocblas)
    return PlanRequest(
        env=env,
        config=args.config,
        sysfs=args.sysfs,
        hip=args.hip,
        choice=choice,
        device=args.device if planning else None,
        integrated=planning and args.integrated,
        os=args.os if planning else None,
        kv=args.kv if planning else None,
        pack=args.pack if planning else None,
        vision=args.vision if planning else None,
        kv_streaming=planning and args.kv_streaming,
        ple_table_gib=args.ple_table_gib if planning else None,
        profile=args.profile if planning else None,
        hipblaslt=args.hipblaslt if planning else None,
        rocblas=args.rocblas if planning else None,
        engine_args=tuple(engine[1:]) if engine else (),
        threads=getattr(args, "threads", None) or 0,
        for_run=args.command == "run" and engine is None,
        recorder=recorder or Recorder(),
    )
