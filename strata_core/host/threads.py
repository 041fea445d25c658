"""How many threads the host kernels run on, and how OpenMP's idle threads wait between
calls, chosen by measurement: a decode step of the workload's shape (its matvec and a
one-token expert step) timed on one thread and on every core, once with OpenMP's own wait
policy and once with OMP_WAIT_POLICY=active, each in a new Python (the OpenMP runtime reads
its wait policy when it loads). Where more threads are not faster than one by
MARGIN, one thread runs: a default that is never slower than one thread. The measurement is
kept in the answer cache's folder for a day; a host tuning table (`strata-core tune --host`)
records one for good.
"""

from __future__ import annotations

import os
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from ..answer_cache import Recorder, directory, read_entry, write_entry
from ..api.records import Workload
from ..people import counted

#: how much faster a choice must be than the simpler one (fewer threads, OpenMP's own wait)
MARGIN = 1.05
#: how long a measurement is kept
KEPT_S = 24 * 3600
#: the module that times a decode step, and the longest it may take
TRIAL = "strata_core.host.thread_trial"
TRIAL_TIMEOUT_S = 60.0


@attrs.frozen
class ThreadChoice:
    """The host kernels' threads (None: measured when the workload runs) and OpenMP's wait
    policy (None: OpenMP's own), where they come from (``user``, ``table``, ``measured``,
    ``one core``, ``not measured``) and why."""

    threads: int | None
    wait_policy: str | None
    source: str
    reason: str

    def summary(self) -> str:
        """What runs: ``2 threads, OMP_WAIT_POLICY=active``."""
        if self.threads is None:
            return "measured when the workload runs"
        count = counted(self.threads, "thread")
        return count + (f", OMP_WAIT_POLICY={self.wait_policy}" if self.wait_policy else "")


def cores() -> int:
    """The cores this process may run on (as OpenMP counts them)."""
    return len(os.sched_getaffinity(0))


def user_choice(threads: int, env: Mapping[str, str]) -> ThreadChoice | None:
    """``--threads`` or OMP_NUM_THREADS, with OMP_WAIT_POLICY where it is set."""
    policy = env.get("OMP_WAIT_POLICY", "").strip().lower() or None
    if threads:
        return ThreadChoice(threads, policy, "user", f"--threads {threads}")
    number = env.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if number.isdecimal() and int(number) > 0:
        return ThreadChoice(int(number), policy, "user", f"OMP_NUM_THREADS={number}")
    return None


def choose(times: Mapping[str, Mapping[str, float]], when: str) -> ThreadChoice:
    """The choice ``times`` make (per wait policy, ``default`` or ``active``: a decode step's
    seconds per thread count). Each policy's times count against its own one-thread time, so
    that a load that changed between the two measurements does not decide; a choice with
    more threads, or the active wait, is taken only where it is MARGIN faster."""
    candidates = sorted(
        (int(threads), policy != "default", policy, seconds / by_threads["1"])
        for policy, by_threads in times.items()
        for threads, seconds in by_threads.items()
    )
    threads, policy, ratio = 1, "default", 1.0
    for count, _, wait, share in candidates:
        if share * MARGIN < ratio:
            threads, policy, ratio = count, wait, share
    if threads == 1:
        return ThreadChoice(1, None, "measured", f"more threads were not faster; {when}")
    return ThreadChoice(
        threads,
        None if policy == "default" else policy,
        "measured",
        f"a decode step took {ratio:.0%} of one thread's time; {when}",
    )


def table_choice(meta: Mapping[str, str], table: str) -> ThreadChoice | None:
    """The threads a host tuning table records (``threads=N``, ``omp_wait_policy=...``)."""
    if "threads" not in meta:
        return None
    threads, policy = int(meta["threads"]), meta.get("omp_wait_policy")
    return ThreadChoice(threads, policy, "table", f"from the host tuning table {table}")


def measure(workload: Workload, env: Mapping[str, str], recorder: Recorder) -> dict[str, Any]:
    """The decode step's times with OpenMP's own wait policy and with the active one, each in
    a new Python (strata_core.host.thread_trial; a fork would inherit an OpenMP runtime this
    process may have started, which hangs in a fork); ChildFailed where one gives no
    answer."""
    from ..child import run_json_module

    shape = (str(workload.ffn), str(workload.hidden), str(workload.experts_per_token))
    own = {k: v for k, v in env.items() if k != "OMP_WAIT_POLICY"}
    return {
        policy: run_json_module(
            TRIAL, own | extra, TRIAL_TIMEOUT_S, "the threads' trial", recorder, shape
        )
        for policy, extra in (("default", {}), ("active", {"OMP_WAIT_POLICY": "active"}))
    }


def _key(workload: Workload) -> str:
    from .loading import LIBRARY
    from .platform import cpu_name

    library = os.stat(LIBRARY)
    return repr(
        [cpu_name(), cores(), str(LIBRARY), library.st_mtime_ns, library.st_size,
         workload.ffn, workload.hidden, workload.experts_per_token]
    )  # fmt: skip


def _kept_path(key: str, env: Mapping[str, str]) -> Path:
    return Path(directory(dict(env))) / f"threads-{zlib.crc32(key.encode()):08x}.marshal"


def _kept(key: str, env: Mapping[str, str], recorder: Recorder) -> dict[str, Any] | None:
    """The measurement kept for ``key``, if it is younger than KEPT_S."""
    if env.get("STRATA_CACHE", "1") == "0":
        return None
    path = _kept_path(key, env)
    recorder.stat(path)
    entry = read_entry(str(path))
    fresh = isinstance(entry, dict) and entry.get("key") == key
    return entry if fresh and 0 <= time.time() - entry.get("when", 0) < KEPT_S else None


def host_threads(
    threads: int,
    env: Mapping[str, str],
    table: ThreadChoice | None,
    workload: Workload,
    recorder: Recorder,
    measure_now: bool,
) -> ThreadChoice:
    """The host kernels' threads: ``--threads`` (``threads``) or OMP_NUM_THREADS, else the
    host tuning table's, else one core's, else a measurement kept in the answer cache's
    folder, else (with ``measure_now``, for a run) a measurement made now and kept."""
    chosen = user_choice(threads, env) or table
    if chosen is not None:
        return chosen
    if cores() == 1:
        return ThreadChoice(1, None, "one core", "this process may run on one core")
    key = _key(workload)
    entry = _kept(key, env, recorder)
    if entry is not None:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry["when"]))
        return choose(entry["times"], f"measured {when}, kept a day")
    if not measure_now:
        return ThreadChoice(
            None, None, "not measured", "no host tuning table records them; none measured yet"
        )
    from ..child import ChildFailed

    try:
        times = measure(workload, env, recorder)
    except ChildFailed as failed:
        return ThreadChoice(1, None, "measured", f"the measurement failed ({failed})")
    if env.get("STRATA_CACHE", "1") != "0":
        write_entry(str(_kept_path(key, env)), {"key": key, "when": time.time(), "times": times})
    return choose(times, "measured now")
