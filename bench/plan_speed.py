"""How fast `strata-core` answers, as whole processes beside a bare `python -c pass` in the
same run: `--version`, `plan --json` uncached (STRATA_CACHE=0; also with the HIP probe, and
both probes, turned off) and from a warm answer cache (also through the `strata-core` console
script, the launcher's path, where this Python has one), `devices`, `import strata_core.cli.main`,
and two floors: a process importing only the libraries strata is bound to use (pluggy, attrs,
cattrs, structlog), and one importing those of them that `plan --json` loads (pluggy, attrs),
nothing of strata. The commands take turns, round after round, so that a
busy machine slows each alike; each time is a median of --runs rounds, after a first round that
also writes the bytecode caches an installed package has (PYTHONDONTWRITEBYTECODE is dropped).
Beside wall time, each process's CPU time (user + system, from the kernel's accounting of
ended children), which a machine shared with other work disturbs less. Then in-process
planning with cached detection.

Runs wherever strata imports with this Python, the checkout's venv or a bare python3 with the
wheels on PYTHONPATH (scripts/nvidia-gpu.sh):
    python3 bench/plan_speed.py [--runs 15] [--sysfs DIR]
Goals (issue 24), each said met or not at the end: `plan --json` uncached at most 3x
`python -c pass` without a GPU (no AMD or NVIDIA GPU under the sysfs root), 4x with one;
cached at most 1.5x; `devices` at most 4x; `import strata_core.cli.main` at most 100 ms.
Issue 3: in-process planning well under 5 ms.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STRATA = [sys.executable, "-m", "strata_core"]
#: the console script beside this Python, as an installed package has it
SCRIPT = Path(sys.executable).with_name("strata-core")
#: the libraries strata is bound to use, and those of them `plan --json` loads, imported with
#: nothing of strata
FLOOR = "import pluggy, attrs, cattrs, structlog"
PLAN_FLOOR = "import pluggy, attrs"


def cases(sysfs: list[str], cache: str) -> list[tuple[str, list[str], dict[str, str]]]:
    """(label, argv, environment changes) of each measured process."""
    uncached = {"STRATA_CACHE": "0"}
    warm = {"STRATA_CACHE": "1", "STRATA_CACHE_DIR": cache}
    through_script = [
        ("plan --json, cache warm, strata-core", [str(SCRIPT), "plan", "--json", *sysfs], warm)
    ]
    return [
        ("python -c pass", [sys.executable, "-c", "pass"], {}),
        ("floor: " + FLOOR, [sys.executable, "-c", FLOOR], {}),
        ("floor of plan: " + PLAN_FLOOR, [sys.executable, "-c", PLAN_FLOOR], {}),
        ("import strata_core.cli.main", [sys.executable, "-c", "import strata_core.cli.main"], {}),
        ("--version", [*STRATA, "--version"], uncached),
        ("plan --json", [*STRATA, "plan", "--json", *sysfs], uncached),
        (
            "plan --json, STRATA_HIP_PROBE=0",
            [*STRATA, "plan", "--json", *sysfs],
            uncached | {"STRATA_HIP_PROBE": "0"},
        ),
        (
            "plan --json, both probes off",
            [*STRATA, "plan", "--json", *sysfs],
            uncached | {"STRATA_HIP_PROBE": "0", "STRATA_CUDA_PROBE": "0"},
        ),
        ("plan --json, cache warm", [*STRATA, "plan", "--json", *sysfs], warm),
        *(through_script if SCRIPT.exists() else []),
        ("devices", [*STRATA, "devices", *sysfs], uncached),
    ]


def children_cpu() -> float:
    """User and system seconds of every ended child process so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def processes(runs: int, sysfs: list[str]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each case's wall times and CPU times, the cases taking turns in every round, in a folder
    of their own (``-m`` puts it on sys.path, whose folders a cached answer depends on)."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as quiet:
        measured = cases(sysfs, cache)
        base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        environments = [base | extra for _, _, extra in measured]
        for (label, argv, _), env in zip(measured, environments, strict=True):
            done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=quiet)
            if done.returncode != 0:
                sys.exit(f"{label}: exit status {done.returncode}: {done.stderr.strip()}")
        times: dict[str, list[float]] = {label: [] for label, _, _ in measured}
        cpu: dict[str, list[float]] = {label: [] for label, _, _ in measured}
        quietly = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        for _ in range(runs):
            for (label, argv, _), env in zip(measured, environments, strict=True):
                start, start_cpu = time.perf_counter(), children_cpu()
                subprocess.run(argv, env=env, cwd=quiet, **quietly)
                times[label].append(time.perf_counter() - start)
                cpu[label].append(children_cpu() - start_cpu)
    return times, cpu


def goals(times: dict[str, list[float]], sysfs: Path) -> list[tuple[str, float, float, str]]:
    """(what, measured, limit, unit) of each goal of issue 24, ratios to ``python -c pass``."""
    from strata_core.answer_cache import Recorder
    from strata_core.detect.hardware import amd_gpu, nvidia_gpu

    gpu = amd_gpu(sysfs, Recorder()) or nvidia_gpu(sysfs, Recorder())
    median = {label: statistics.median(measured) for label, measured in times.items()}
    bare = median["python -c pass"]
    return [
        ("plan --json uncached, " + ("a GPU" if gpu else "no GPU"),
         median["plan --json"] / bare, 4.0 if gpu else 3.0, "x"),
        ("plan --json cached", median["plan --json, cache warm"] / bare, 1.5, "x"),
        ("devices", median["devices"] / bare, 4.0, "x"),
        ("import strata_core.cli.main", median["import strata_core.cli.main"] * 1e3, 100.0, " ms"),
    ]  # fmt: skip


def in_process(runs: int = 2000) -> float:
    """The median time of one build_plan, detection done once before."""
    from strata_core.api.manager import PluginManager
    from strata_core.api.records import DetectionContext, RunContext
    from strata_core.plan.claims import assign
    from strata_core.plan.devices import scan
    from strata_core.plan.plan import build_plan
    from strata_core.testing.sysfs import R9700, RADEON_780M, write_sysfs

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="rounds (default 15)")
    parser.add_argument("--sysfs", metavar="DIR", help="sysfs root (default: this machine's)")
    args = parser.parse_args()
    sysfs = ["--sysfs", args.sysfs] if args.sysfs else []
    times, cpu = processes(args.runs, sysfs)
    bare = statistics.median(times["python -c pass"])
    bare_cpu = statistics.median(cpu["python -c pass"])
    print(f"{sys.executable} {sys.version.split()[0]}; {os.cpu_count()} CPUs; "
          f"medians of {args.runs} runs; sysfs {args.sysfs or '/sys'}")
    print(f"  {'':50} {'wall':>9}  {'(spread)':>13} {'ratio':>6}  {'CPU':>9} {'ratio':>6}")
    for label, measured in times.items():
        median, median_cpu = statistics.median(measured), statistics.median(cpu[label])
        spread = f"({min(measured) * 1e3:.0f}-{max(measured) * 1e3:.0f} ms)"
        print(f"  {label:50} {median * 1e3:6.1f} ms  {spread:>13} {median / bare:5.1f}x"
              f"  {median_cpu * 1e3:6.1f} ms {median_cpu / bare_cpu:5.1f}x")  # fmt: skip
    print("goals (issue 24):")
    for what, value, limit, unit in goals(times, Path(args.sysfs or "/sys")):
        verdict = "met" if value <= limit else "NOT met"
        print(f"  {what:34} {value:7.1f}{unit} (at most {limit:g}{unit}): {verdict}")
    print(f"in-process plan, cached detection: {in_process() * 1e3:.3f} ms (median of 2000)")


if __name__ == "__main__":
    main()
