"""How `strata-core devices --json` grows with the cards NVML lists: the stand-in NVML of
tests/fixtures/nvml_stand_in.c (built here with cc) reports N copies of an H200, each at a PCI
address of its own (STRATA_CUDA_PROBE=1 has NVML asked beside a tree other than /sys), and the
command's wall and CPU time is taken for each N, a median of --runs runs, beside
`python -c pass`. A linear command takes ten times as long for ten times the cards. Goal
(issue 55): 100,000 cards in under 2 s.

    uv run python bench/many_devices.py [--runs 3] [--counts 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_CARDS, GOAL_S = 100_000, 2.0


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of ``command``, its output thrown away."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--counts", default="1000,10000,100000")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from strata_core.testing.sysfs import write_nvidia_gpu

    with tempfile.TemporaryDirectory(prefix="strata-bench-") as folder:
        scratch = Path(folder)
        nvml = scratch / "libnvidia-ml.so.1"
        compiler = shutil.which("cc") or "gcc"
        subprocess.run([compiler, "-shared", "-fPIC", "-o", str(nvml),
                        str(ROOT / "tests/fixtures/nvml_stand_in.c")], check=True)  # fmt: skip
        tree = write_nvidia_gpu(scratch / "sys", "0000:41:00.0")
        base = {"PATH": os.environ.get("PATH", ""), "HOME": str(scratch), "STRATA_CACHE": "0",
                "STRATA_NVML_LIBRARY": str(nvml), "STRATA_CUDA_PROBE": "1"}  # fmt: skip
        command = [sys.executable, "-m", "strata_core", "devices", "--json", "--sysfs", str(tree)]
        floor = statistics.median(
            timed([sys.executable, "-c", "pass"], base)[0] for _ in range(args.runs)
        )
        print(f"python -c pass: {floor * 1e3:.0f} ms")
        print(f"{'cards':>8}  {'wall':>8}  {'CPU':>8}  {'per card':>9}")
        last = None
        for count in (int(c) for c in args.counts.split(",")):
            env = base | {"STAND_IN_NVML_COUNT": str(count)}
            runs = [timed(command, env) for _ in range(args.runs)]
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            print(f"{count:>8,}  {wall:>7.2f}s  {cpu:>7.2f}s  {wall / count * 1e6:>7.1f}us")
            if count == GOAL_CARDS:
                last = wall
        if last is not None:
            verdict = "met" if last < GOAL_S else "not met"
            print(f"goal: {GOAL_CARDS:,} cards under {GOAL_S:g} s: {verdict} ({last:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
