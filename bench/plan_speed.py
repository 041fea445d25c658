"""Planning speed: in-process planning with cached detection, and the `strata-core plan`
command's start against a bare `python -c pass`.

Run: uv run python bench/plan_speed.py
Goals (issue 3): in-process planning well under 5 ms; the command within 3x a bare start.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from strata_core.claims import assign
from strata_core.devices import scan
from strata_core.manager import PluginManager
from strata_core.plan import build_plan
from strata_core.records import DetectionContext, RunContext
from strata_core.testing.sysfs import R9700, RADEON_780M, write_sysfs


def in_process(runs: int = 2000) -> float:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        root = write_sysfs(Path(tmp), [RADEON_780M, R9700])
        manager = PluginManager.discover(env)
        found = scan(manager, DetectionContext(sysfs=root, env=env, hip_probe=False))
    assignments, _ = assign(manager, found.devices)
    main = assignments[1]
    context = RunContext(
        os="linux",
        kv="int8",
        pack="IQ3_S",
        other_cards=(found.devices[0],),
        ram_bytes=64 << 30,
        ple_table_bytes=27 << 30,
    )
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        build_plan(manager, main.device, main.plugin, context, env, {}, (), "strata.toml")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def command(argv: list[str], runs: int = 21) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    planning = in_process()
    print(f"in-process plan, cached detection: {planning * 1e3:.3f} ms (median of 2000)")
    with tempfile.TemporaryDirectory() as tmp:
        root = write_sysfs(Path(tmp), [RADEON_780M, R9700])
        bare = command([sys.executable, "-c", "pass"])
        script = str(Path(sys.executable).parent / "strata-core")
        plan = command([script, "plan", "--sysfs", str(root), "--json"])
    print(
        f"python -c pass: {bare * 1e3:.1f} ms; strata-core plan --json: {plan * 1e3:.1f} ms "
        f"({plan / bare:.1f}x), medians of 21"
    )


if __name__ == "__main__":
    main()
