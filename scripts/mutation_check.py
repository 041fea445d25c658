"""A small mutation check of the decision core: each mutation of MUTATIONS (one plausible bug,
a snippet of a source file replaced) is applied in place, the tests that should catch it run,
and the file is put back, whatever happens (an error, Ctrl-C or SIGTERM included). A mutation
the tests fail under is killed; one they pass under survived, and is a test to write. Each
set of covering tests first runs without any mutation: where it fails, its mutations are not
run and say "red" (a kill would prove nothing).

    uv run python scripts/mutation_check.py [--json FILE] [-k WORD]

Run by hand, not in CI: it rewrites the checkout's files while it runs, so run nothing else in
the checkout meanwhile. Each original snippet must occur exactly once in its file; where one
does not, the check refuses before it changes anything (the list has drifted from the code).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
#: one process, no random order, stop at the first failure: the quickest verdict
PYTEST = ("uv", "run", "--locked", "pytest", "-q", "-x", "-p", "no:randomly", "-n0")
#: the exit status pytest gives when tests failed
TESTS_FAILED = 1


@dataclass(frozen=True)
class Mutation:
    """One plausible bug: ``original`` in ``file`` (relative to the checkout) becomes
    ``replacement``; ``tests`` are the test files that should catch it, ``select`` an optional
    pytest ``-k`` expression among them."""

    name: str
    file: str
    original: str
    replacement: str
    tests: tuple[str, ...]
    description: str
    select: str | None = None


@dataclass(frozen=True)
class Outcome:
    """What the tests said under one mutation."""

    name: str
    area: str
    description: str
    killed: bool
    exit_status: int
    seconds: float
    #: whether the covering tests pass without the mutation; where they do not, it is not run
    green_without: bool = True


SELECTION = "strata_core/plan/selection.py"
CLAIMS = "strata_core/plan/claims.py"
RESOLVE = "strata_core/plan/resolve.py"
KERNELS = "strata_core/api/kernels.py"
HOST_BANDS = "strata_core/host/topk_bands.py"
LOOKUP = "strata_core/tuning/lookup.py"
TABLES = "strata_core/tuning/tables.py"
VISIBILITY = "strata_core/detect/visibility.py"
KFD = "strata_core/detect/kfd.py"
FILES = "strata_core/files.py"
NAMES = "strata_core/detect/amdgpu_ids.py"
DEVICES = "strata_core/plan/devices.py"
ARCH = "strata_core/api/arch.py"
CACHE = "strata_core/answer_cache.py"

DEVICES_TESTS = ("tests/test_devices.py",)
PLAN_TESTS = ("tests/test_plan.py",)
BAND_TESTS = ("tests/test_page_rules.py", "tests/test_host_topk_bands.py")
#: the band tests, without the page rules' slower commands of other rules
BANDS = "topk or band"
TUNING_TESTS = ("tests/test_tuning.py",)
TABLE_TESTS = ("tests/test_tables.py",)
VISIBILITY_TESTS = ("tests/test_visibility.py", "tests/test_devices.py")
KFD_TESTS = ("tests/test_kfd.py",)
REAL_TESTS = ("tests/test_real_machines.py",)
NAMES_TESTS = ("tests/test_amdgpu_ids.py", "tests/test_kfd.py")
FILES_TESTS = ("tests/test_files.py", "tests/test_file_writers.py")
CACHE_TESTS = ("tests/test_answer_cache.py",)

MUTATIONS = (
    Mutation(
        "selection/igpu-skip",
        SELECTION,
        "    discrete = [i for i, a in usable.items() if not a.device.integrated]\n"
        "    pool = discrete or list(usable)\n",
        "    discrete = [i for i, a in usable.items() if not a.device.integrated]\n"
        "    pool = list(usable)\n",
        DEVICES_TESTS,
        "the automatic choice weighs integrated GPUs beside a discrete card that can run",
    ),
    Mutation(
        "selection/vram-tie",
        SELECTION,
        "best = max(pool, key=lambda i: (usable[i].device.vram_bytes or 0, -i))",
        "best = max(pool, key=lambda i: (usable[i].device.vram_bytes or 0, i))",
        DEVICES_TESTS,
        "equal VRAM goes to the higher HIP number instead of the lower",
    ),
    Mutation(
        "selection/all-igpu-skip",
        SELECTION,
        "        pool = discrete or list(usable)\n        ranked",
        "        pool = list(usable)\n        ranked",
        DEVICES_TESTS,
        "--gpus all takes the integrated GPU beside discrete cards",
    ),
    Mutation(
        "selection/all-order",
        SELECTION,
        "ranked = sorted(pool, key=lambda i: (-(usable[i].device.vram_bytes or 0), i))",
        "ranked = sorted(pool, key=lambda i: ((usable[i].device.vram_bytes or 0), i))",
        DEVICES_TESTS,
        "--gpus all runs the cards least VRAM first",
    ),
    Mutation(
        "selection/main-card",
        SELECTION,
        'roles = {i: "helper" for i in order[:-1]} | {order[-1]: "main"}',
        'roles = {i: "helper" for i in order[1:]} | {order[0]: "main"}',
        DEVICES_TESTS,
        "with several cards the first one is the main card, not the last",
    ),
    Mutation(
        "selection/vendor",
        SELECTION,
        'nvidia = any(a.usable and a.device.vendor == "nvidia" for a in assignments)',
        'nvidia = any(a.device.vendor == "nvidia" for a in assignments)',
        ("tests/test_nvidia.py",),
        "an NVIDIA card no plugin runs makes the CUDA backend run",
    ),
    Mutation(
        "claims/refusal-claims",
        CLAIMS,
        "positive = [(name, c) for name, c in claims if c.score > 0]",
        "positive = [(name, c) for name, c in claims if c.score >= 0]",
        DEVICES_TESTS + ("tests/test_manager.py",),
        "a plugin's refusal (score 0) counts as a claim",
    ),
    Mutation(
        "claims/tie",
        CLAIMS,
        "    if len(top) > 1:\n",
        "    if len(top) > 2:\n",
        DEVICES_TESTS + ("tests/test_manager.py",),
        "two plugins tied on specificity: the first wins instead of the user being asked",
    ),
    Mutation(
        "claims/most-specific",
        CLAIMS,
        "best = max(c.score for _, c in positive)",
        "best = min(c.score for _, c in positive)",
        DEVICES_TESTS + ("tests/test_manager.py",),
        "the least specific claim wins",
    ),
    Mutation(
        "claims/hidden-usable",
        CLAIMS,
        "return self.plugin is not None and self.device.visible",
        "return self.plugin is not None",
        DEVICES_TESTS,
        "a card the visibility variables hide is still usable",
    ),
    Mutation(
        "resolve/user-over-config",
        RESOLVE,
        'source, value = ("user", user[name]) if name in user else ("config", config[name])',
        'source, value = ("config", config[name]) if name in config else ("user", user[name])',
        PLAN_TESTS,
        "the run config's value beats the user's",
    ),
    Mutation(
        "resolve/applies-warning",
        RESOLVE,
        "    if not switch.applies_to(device, os_name):\n",
        "    if False:\n",
        PLAN_TESTS,
        "a switch set where it does not apply gets no warning",
    ),
    Mutation(
        "resolve/flag-equals",
        RESOLVE,
        "            skip = not eq\n",
        "            skip = True\n",
        PLAN_TESTS + ("tests/test_launcher.py",),
        "a declared --flag=value also drops the argument after it",
    ),
    Mutation(
        "bands/decode-edge",
        KERNELS,
        "    if cells > WIDE_PAST_CELLS:\n",
        "    if cells >= WIDE_PAST_CELLS:\n",
        BAND_TESTS,
        "a decode step at exactly 135K cells runs the wide kernel",
        BANDS,
    ),
    Mutation(
        "bands/prompt-edge",
        KERNELS,
        "if prompt_read and cells >= WIDE_FROM_CELLS_ON_A_PROMPT_READ:",
        "if prompt_read and cells > WIDE_FROM_CELLS_ON_A_PROMPT_READ:",
        BAND_TESTS,
        "a prompt read at exactly 90K cells runs the register kernel",
        BANDS,
    ),
    Mutation(
        "bands/stream-band",
        KERNELS,
        "and WIDE_FROM_CELLS_ON_A_PROMPT_READ <= cells <= WIDE_PAST_CELLS",
        "and WIDE_FROM_CELLS_ON_A_PROMPT_READ < cells < WIDE_PAST_CELLS",
        BAND_TESTS,
        "STRATA_TOPK_STREAM=0 loses the band's two edges",
        BANDS,
    ),
    Mutation(
        "bands/host-k-edge",
        HOST_BANDS,
        "wide = kept >= band.wide_from_k and cells >= band.wide_from_cells",
        "wide = kept > band.wide_from_k and cells >= band.wide_from_cells",
        BAND_TESTS,
        "the host's wide top-k starts one past its measured k",
        BANDS,
    ),
    Mutation(
        "bands/wmma-min-queries",
        KERNELS,
        "if workload.prompt_queries < minimum:",
        "if workload.prompt_queries <= minimum:",
        ("tests/test_page_rules.py", "tests/test_plan.py"),
        "STRATA_HIP_WMMA=auto needs one query more than its minimum",
        "wmma",
    ),
    Mutation(
        "lookup/header-version",
        LOOKUP,
        "if (table.kind, table.arch, table.version) != (kind, arch, version.version):",
        "if (table.kind, table.arch) != (kind, arch):",
        TUNING_TESTS,
        "a table whose header names another version than its file name is taken",
    ),
    Mutation(
        "lookup/table-default",
        LOOKUP,
        '    if table_switch.value == "on":\n',
        '    if table_switch.value != "off":\n',
        TUNING_TESTS,
        "a table is taken by default on every card",
    ),
    Mutation(
        "lookup/forced-version-warning",
        LOOKUP,
        "elif table.arch != gfx or (version.version and table.version != version.version):",
        "elif table.arch != gfx:",
        TUNING_TESTS,
        "a forced table of another library version is kept without a warning",
    ),
    Mutation(
        "lookup/search-order",
        LOOKUP,
        "    return dirs + list(plugin_dirs)\n",
        "    return list(plugin_dirs) + dirs\n",
        TUNING_TESTS,
        "the plugin's own tables come before the engine's folder and STRATA_TUNING_DIR",
    ),
    Mutation(
        "lookup/rocblas-folder",
        LOOKUP,
        "told = folder if kind is ROCBLAS else path",
        "told = path",
        TUNING_TESTS,
        "STRATA_ROCBLAS_TUNING is given the table's file, not its folder",
    ),
    Mutation(
        "tables/min-gain-edge",
        TABLES,
        "if solution != DEFAULT and gain < min_gain:",
        "if solution != DEFAULT and gain <= min_gain:",
        TABLE_TESTS,
        "a winner exactly at min_gain is refused",
    ),
    Mutation(
        "tables/rocblas-buckets",
        TABLES,
        "if not low <= r.key[0] <= high",
        "if not low < r.key[0] <= high",
        TABLE_TESTS,
        "the rocBLAS token bucket T 256 is refused",
    ),
    Mutation(
        "tables/zero-size",
        TABLES,
        "elif not is_digits(text) or int(text) == 0:",
        "elif not is_digits(text):",
        TABLE_TESTS,
        "a shape of size 0 is taken",
    ),
    Mutation(
        "tables/duplicate-shape",
        TABLES,
        "        if row.key in seen:\n",
        "        if False:\n",
        TABLE_TESTS,
        "two rows of the same shape are both taken",
    ),
    Mutation(
        "visibility/order",
        VISIBILITY,
        'for key in ("ROCR_VISIBLE_DEVICES", hip_key):',
        'for key in (hip_key, "ROCR_VISIBLE_DEVICES"):',
        VISIBILITY_TESTS,
        "HIP_VISIBLE_DEVICES filters before ROCR_VISIBLE_DEVICES",
    ),
    Mutation(
        "visibility/invalid-ends",
        VISIBILITY,
        "        else:\n            break\n        if position not in chosen:",
        "        else:\n            continue\n        if position not in chosen:",
        VISIBILITY_TESTS,
        "an invalid token is skipped instead of ending the list",
    ),
    Mutation(
        "visibility/hip-over-cuda",
        VISIBILITY,
        'hip_key = "HIP_VISIBLE_DEVICES" if "HIP_VISIBLE_DEVICES" in env else '
        '"CUDA_VISIBLE_DEVICES"',
        'hip_key = "CUDA_VISIBLE_DEVICES" if "CUDA_VISIBLE_DEVICES" in env else '
        '"HIP_VISIBLE_DEVICES"',
        VISIBILITY_TESTS,
        "CUDA_VISIBLE_DEVICES wins over HIP_VISIBLE_DEVICES on an AMD card",
    ),
    Mutation(
        "visibility/node-override",
        VISIBILITY,
        'keys = ([f"{OVERRIDE}_{node_id}"] if node_id is not None else []) + [OVERRIDE]',
        'keys = [OVERRIDE] + ([f"{OVERRIDE}_{node_id}"] if node_id is not None else [])',
        VISIBILITY_TESTS,
        "the global HSA_OVERRIDE_GFX_VERSION wins over the per-node one",
    ),
    Mutation(
        "kfd/apu-4gib-edge",
        KFD,
        "if vram <= 4 * GIB and gtt >= 8 * GIB and gtt >= 4 * vram:",
        "if vram < 4 * GIB and gtt >= 8 * GIB and gtt >= 4 * vram:",
        KFD_TESTS,
        "an unknown APU with exactly 4 GiB of VRAM is taken for a discrete card",
    ),
    Mutation(
        "kfd/apu-gtt-edge",
        KFD,
        "if vram <= 4 * GIB and gtt >= 8 * GIB and gtt >= 4 * vram:",
        "if vram <= 4 * GIB and gtt > 8 * GIB and gtt >= 4 * vram:",
        KFD_TESTS,
        "an unknown APU with exactly 8 GiB of GTT is taken for a discrete card",
    ),
    Mutation(
        "kfd/apu-ratio-edge",
        KFD,
        "if vram <= 4 * GIB and gtt >= 8 * GIB and gtt >= 4 * vram:",
        "if vram <= 4 * GIB and gtt >= 8 * GIB and gtt > 4 * vram:",
        KFD_TESTS,
        "an unknown APU with exactly four times its VRAM in GTT is taken for a discrete card",
    ),
    Mutation(
        "kfd/vram-vendor-marker",
        KFD,
        'for marker in ("board_info", "mem_info_vram_vendor"):',
        'for marker in ("board_info",):',
        KFD_TESTS,
        "a discrete card known by its mem_info_vram_vendor alone falls to the VRAM/GTT rule",
    ),
    Mutation(
        "kfd/apu-cpu-cores",
        KFD,
        "    if cores > 0:  # one node for the CPU and the GPU",
        "    if cores > 8:  # one node for the CPU and the GPU",
        KFD_TESTS + REAL_TESTS,
        "an APU's combined node with 8 CPU cores (a Raven) is not taken for integrated",
    ),
    Mutation(
        "kfd/coherent-host-access",
        KFD,
        'if fields.get("capability", 0) & COHERENT_HOST_ACCESS:',
        'if fields.get("capability", 0) & COHERENT_HOST_ACCESS << 1:',
        KFD_TESTS + REAL_TESTS,
        "an MI300A, whose GPU shares the CPU's memory, is taken for a discrete card",
    ),
    Mutation(
        "names/revision-first",
        NAMES,
        "if revision is not None and (device_id, revision) in self._exact:",
        "if revision is None and (device_id, revision) in self._exact:",
        NAMES_TESTS,
        "a card of a device id with several names is not named by its revision",
    ),
    Mutation(
        "devices/name-order",
        DEVICES,
        'named = facts["name"] or arch.name_of(facts["device_id"], facts["revision"])',
        'named = arch.name_of(facts["device_id"], facts["revision"]) or facts["name"]',
        REAL_TESTS + ("tests/test_devices.py",),
        "the plugin's list wins over the name the runtime or libdrm gives the card",
    ),
    Mutation(
        "devices/device-id-unique",
        ARCH,
        "return found[0] if len(found) == 1 else None",
        "return found[0] if found else None",
        ("tests/test_archdb.py",),
        "a PCI device id that two plugins list gives the first one's target",
    ),
    Mutation(
        "selection/unknown-vram",
        SELECTION,
        "    elif len(unknown) == len(pool):",
        "    elif len(unknown) > len(pool):",
        DEVICES_TESTS,
        "a choice among cards of unknown VRAM claims to have taken the most VRAM",
    ),
    Mutation(
        "files/fsync",
        FILES,
        "        os.fchmod(fd, 0o600 if private else _mode(old))\n        os.fsync(fd)\n",
        "        os.fchmod(fd, 0o600 if private else _mode(old))\n",
        FILES_TESTS,
        "the atomic write renames a file whose data may not be on the disk yet",
    ),
    Mutation(
        "files/folder-sync",
        FILES,
        "        sync_folder(folder)\n    except BaseException:\n",
        "    except BaseException:\n",
        FILES_TESTS,
        "the rename is not synced: after a crash the folder may hold the old file",
    ),
    Mutation(
        "files/mode",
        FILES,
        "    if old is not None:\n        return stat.S_IMODE(old.st_mode)\n",
        "",
        FILES_TESTS,
        "a replaced file gets the umask's mode instead of keeping its own",
    ),
    Mutation(
        "files/temporary",
        FILES,
        "            os.unlink(temp)\n        except FileNotFoundError:\n",
        "            pass\n        except FileNotFoundError:\n",
        FILES_TESTS,
        "a failed write leaves its temporary file behind",
    ),
    Mutation(
        "cache/listed-folders",
        CACHE,
        '        (listing, entry["dirs"]),\n',
        "",
        CACHE_TESTS,
        "a folder that gained an entry (a new KFD node) does not spoil the stored answer",
    ),
    Mutation(
        "cache/rocm-variables",
        CACHE,
        '    "ROCR_",\n',
        "",
        CACHE_TESTS,
        "ROCR_VISIBLE_DEVICES is not part of the stored answer's key",
    ),
    Mutation(
        "cache/refusals",
        CACHE,
        "if not _enabled(env) or recorder.refusals or _warned:",
        "if not _enabled(env) or _warned:",
        CACHE_TESTS,
        "an answer that depends on something uncheckable is stored anyway",
    ),
    Mutation(
        "cache/evict-order",
        CACHE,
        "for _, size, name in sorted(entries):",
        "for _, size, name in sorted(entries, reverse=True):",
        CACHE_TESTS,
        "the most recently used answers are evicted first",
    ),
)


class Drifted(Exception):
    """A mutation's original snippet is not found exactly once in its file."""


def check_snippets(mutations: Sequence[Mutation]) -> None:
    """Raise Drifted for the first mutation whose snippet is absent or found several times."""
    for mutation in mutations:
        found = (ROOT / mutation.file).read_text().count(mutation.original)
        if found != 1:
            raise Drifted(
                f"{mutation.name}: its snippet is found {found} times in {mutation.file}, "
                "not once: update MUTATIONS"
            )


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM as Ctrl-C: the running mutation is undone on the way out."""
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def applied(mutation: Mutation) -> Iterator[None]:
    """The mutation applied in place while the block runs; the file's own bytes are put back
    afterwards, on an error, Ctrl-C or SIGTERM too."""
    path = ROOT / mutation.file
    original = path.read_bytes()
    try:
        text = original.decode()
        path.write_text(text.replace(mutation.original, mutation.replacement, 1))
        yield
    finally:
        path.write_bytes(original)


def pytest_command(mutation: Mutation) -> list[str]:
    """The pytest call of the mutation's covering tests."""
    command = [*PYTEST, *mutation.tests]
    if mutation.select:
        command += ["-k", mutation.select]
    return command


def run_pytest(command: Sequence[str]) -> tuple[int, float]:
    """The tests' exit status and the seconds they took. Each run gets its own bytecode
    folder, so no module compiled from another version of a file is reused."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="strata-mutation-") as bytecode:
        status = run_alone(command, {**os.environ, "PYTHONPYCACHEPREFIX": bytecode})
    return status, time.perf_counter() - start


def run_alone(command: Sequence[str], env: dict[str, str]) -> int:
    """``command``'s exit status, run in a session of its own, which is killed whole if this
    process is stopped meanwhile: no test runs on once the file is put back."""
    with subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    ) as process:
        try:
            return process.wait()
        except BaseException:
            os.killpg(process.pid, signal.SIGKILL)
            raise


def area(mutation: Mutation) -> str:
    """The part of the decision core a mutation breaks: its name's first word."""
    return mutation.name.split("/", 1)[0]


def status_without(mutation: Mutation, seen: dict[tuple[str, ...], int]) -> int:
    """The exit status of the mutation's tests on the files as they are, each command run
    once (``seen`` keeps them): a kill counts only where they pass."""
    command = tuple(pytest_command(mutation))
    if command not in seen:
        seen[command] = run_pytest(command)[0]
    return seen[command]


def check(mutation: Mutation, seen: dict[tuple[str, ...], int]) -> Outcome:
    """Apply one mutation, run its tests, put the file back: the outcome. Where the tests
    fail without it, it is not applied."""
    said = (mutation.name, area(mutation), mutation.description)
    without = status_without(mutation, seen)
    if without != 0:
        return Outcome(*said, False, without, 0.0, green_without=False)
    with applied(mutation):
        status, seconds = run_pytest(pytest_command(mutation))
    return Outcome(*said, status == TESTS_FAILED, status, round(seconds, 1))


#: the width of the name column: the longest name
NAME_WIDTH = max(len(m.name) for m in MUTATIONS)


def row(outcome: Outcome) -> str:
    """One mutation's line: its name, verdict, seconds and what it breaks."""
    return (
        f"{outcome.name:<{NAME_WIDTH}}  {verdict(outcome):<8}  {outcome.seconds:6.1f} s  "
        f"{outcome.description}"
    )


def kill_ratio(outcomes: Sequence[Outcome]) -> str:
    """How many mutations the tests killed, of how many."""
    killed = sum(o.killed for o in outcomes)
    return f"killed {killed} of {len(outcomes)} ({killed / len(outcomes):.0%})"


def verdict(outcome: Outcome) -> str:
    """killed (a test failed), survived (all passed), red (the tests fail without the
    mutation: not run), or the exit status of another end (a collection error, no tests
    selected), which is a fault of the list, not a kill."""
    if not outcome.green_without:
        return "red"
    if outcome.killed:
        return "killed"
    return "survived" if outcome.exit_status == 0 else f"exit {outcome.exit_status}"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the outcomes to this file")
    parser.add_argument("-k", dest="word", help="only the mutations whose name holds WORD")
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    chosen = [m for m in MUTATIONS if args.word is None or args.word in m.name]
    try:
        check_snippets(chosen)
    except Drifted as drift:
        print(f"mutation_check: refused: {drift}", file=sys.stderr)
        return 2
    if not chosen:
        print(f"mutation_check: no mutation's name holds {args.word!r}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _terminate)
    outcomes = []
    seen: dict[tuple[str, ...], int] = {}
    try:
        for mutation in chosen:
            outcomes.append(check(mutation, seen))
            print(row(outcomes[-1]), flush=True)
    except KeyboardInterrupt:
        print("mutation_check: stopped; the files are as they were", file=sys.stderr)
        return 130
    print(kill_ratio(outcomes))
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=2) + "\n")
    return 0 if all(o.killed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
