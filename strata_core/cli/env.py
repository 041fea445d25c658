"""`strata-core env`: what a report of a run needs (AMD_HIP.md, "Reporting a Windows AMD run":
the card, the driver, what the device lists say), in one command (cli/env_facts.py gathers it),
as text or as its JSON answer."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Mapping
from typing import Any

from .. import people
from ..answer_cache import Recorder
from .answers import dumps, env_answer
from .env_facts import gather
from .options import scan_options
from .request import plan_request


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--json, the sysfs root, the run config and the cards of this PC."""
    scan_options(parser, "run config (default: $STRATA_CONFIG, else ./strata.toml if present)")


def text(answer: Mapping[str, Any], columns: int | None = None) -> list[str]:
    """The report for people, read from its JSON answer, its lines fitted to ``columns``."""
    cpu, numpy = answer["cpu"], answer["numpy"]
    lines = [f"strata {answer['strata']}", "plugins:"]
    lines += [
        f"  {p['name']} ({p['distribution']} {p['version']}): {p['status']}"
        for p in answer["plugins"]
    ]
    lines += [
        f"python: {answer['python']}",
        f"os: {answer['os']} (kernel {answer['kernel']})",
        f"cpu: {cpu['name']} ({cpu['isa_level']}; host kernels {cpu['host_kernels']})",
        f"numpy: {numpy['version']} (BLAS: {numpy['blas'] or 'none found'})",
        f"rocm: {answer['rocm'] or 'none installed'}",
        "drivers:",
    ]
    lines += [f"  {name}: {line or 'not loaded'}" for name, line in answer["drivers"].items()]
    lines += ["runtimes:"] + [f"  {note}" for note in answer["runtimes"]]
    lines += ["libraries:"]
    lines += [
        f"  {name}: {info['version'] or 'unknown'} ({info['how']})"
        for name, info in answer["libraries"].items()
    ]
    lines += ["devices:"]
    for d in answer["devices"]:
        lines += [
            f"  {'*' if d['selected'] else ' '} {'-' if d['index'] is None else d['index']}  "
            f"{d['name']} ({d['gfx']}, {d['family']})",
            f"      {d['status']}; {d['reason']}",
        ]
    if not answer["devices"]:
        lines.append("  none")
    lines += ["variables that change a plan:"]
    lines += [f"  {k}={v}" for k, v in answer["variables"].items()] or ["  none"]
    config = answer["run_config"]
    lines += [f"run config: {config['path'] or 'none'}"]
    if config["path"]:
        gpu = "none" if config["gpu"] is None else config["gpu"]  # N, [N, ...] or "all"
        lines += [
            f"  exe: {config['exe'] or 'none'}",
            f"  gpu: {gpu if isinstance(gpu, str | int) else ','.join(map(str, gpu or ()))}",
            f"  args: {shlex.join(config['args']) or 'none'}",
            "  env:" + ("" if config["env"] else " none"),
        ]
        lines += [f"    {k}={v}" for k, v in config["env"].items()]
    lines += [f"warning: {w}" for w in answer["warnings"]]
    return people.lines_for(lines, columns)


def run(args: argparse.Namespace, env: Mapping[str, str], recorder: Recorder | None = None) -> int:
    """Say what a report of a run needs, as text or JSON."""
    answer = env_answer(gather(plan_request(args, env, recorder)))
    if args.json:
        print(dumps(answer))
    else:
        people.show(text(answer, people.width()))
    return 0
