"""A GPU child process, from the parent's side: ``python -m MODULE FOLDER`` started on a job
left in FOLDER, its stdout lines passed on as they come, its time limits watched (the first
contact with the runtime, then the whole run) and its answer read back. A child that dies,
hangs or fails is one line (NoGpuRun), and never outlives the call."""

from __future__ import annotations

import contextlib
import json
import pickle
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..bounded import CHILD_ANSWER, read_bytes
from ..errors import NoGpuRun, StrataError
from ..native_calls import call_in
from ..plan.plan import RunSettings
from ..process_group import POLL_S, end_group, exited
from ..tuning.dispatch import say
from .gpu_job import ANSWER, CALLING, CONTACT, JOB
from .held_signals import HeldSignals

#: a warning of the child's own Python, as the warnings module shows it:
#: ``FILE:LINE: CATEGORY: message``, then the source line indented under it
PYTHON_WARNING = re.compile(r"\S.*:\d+: [A-Z]\w*Warning: ")


@contextlib.contextmanager
def child_answer(
    module: str,
    job: object,
    settings: RunSettings,
    what: str,
    progress: Callable[[str], None] | None = None,
) -> Iterator[tuple[dict[str, Any], Path]]:
    """Run ``python -m module FOLDER`` on ``job`` within the plan's time limit; its answer
    and FOLDER, after the lines it said are said. Each line the child prints on stdout goes
    to ``progress`` as it comes. NoGpuRun when it dies, hangs, fails or finds no card that
    runs; StrataError when it refuses."""
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        with tempfile.TemporaryDirectory(prefix="strata-gpu-") as folder:
            where = Path(folder)
            status, late, last = _run_child(module, job, settings, where, progress)
            yield from _answer(what, settings, where, status, late, last)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM ends the command as Ctrl-C does: the child is stopped and its folder removed."""
    raise SystemExit(128 + signum)


def _run_child(
    module: str,
    job: object,
    settings: RunSettings,
    where: Path,
    progress: Callable[[str], None] | None,
) -> tuple[int, str | None, str]:
    """Run the child in ``where``, in a process group of its own; its exit status, the limit
    it ran past (None if none), and the last line of its stderr. Neither the child nor
    anything it started outlives this call."""
    (where / JOB).write_bytes(pickle.dumps(job))
    stop = threading.Event()
    late: list[str] = []
    contact = min(settings.contact_timeout_s, settings.timeout_s)

    def watch() -> None:
        """Until the child ends, its limit passes or ``stop`` is set; then its group ends
        (whatever it started, which may hold its pipes, with it)."""
        start = time.monotonic()
        while not exited(child.pid) and not stop.is_set():
            took = time.monotonic() - start
            if took >= contact and contact < settings.timeout_s and not (where / CONTACT).exists():
                late.append("contact")
                break
            if took >= settings.timeout_s:
                late.append("run")
                break
            time.sleep(POLL_S)
        end_group(child.pid)

    with open(where / "stderr", "w+") as stderr:
        with HeldSignals() as held:
            child = subprocess.Popen(
                [sys.executable, "-m", module, str(where)],
                env=dict(settings.child_env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                process_group=0,
            )
        watcher = threading.Thread(target=watch, daemon=True)
        try:
            held.deliver()
            watcher.start()
            assert child.stdout is not None
            for line in child.stdout:
                if progress is not None:
                    progress(line.rstrip("\n"))
            watcher.join()
        finally:
            stop.set()
            if watcher.ident is None:
                end_group(child.pid)
            else:
                watcher.join()
            status = child.wait()
        stderr.seek(0)
        last = last_words(stderr.read())
    return status, late[0] if late else None, last


def last_words(stderr: str) -> str:
    """The last line the child's runtime said on ``stderr``, the child's own Python warnings
    left out (they are not why a runtime failed); "no message" where there is none."""
    said = []
    lines = stderr.splitlines()
    for number, line in enumerate(lines):
        after_warning = number > 0 and PYTHON_WARNING.match(lines[number - 1])
        if PYTHON_WARNING.match(line) or (after_warning and line.startswith("  ")):
            continue
        if line.strip():
            said.append(line.strip())
    return (said or ["no message"])[-1]


def _answer(
    what: str, settings: RunSettings, where: Path, status: int, late: str | None, last: str
) -> Iterator[tuple[dict[str, Any], Path]]:
    call = call_in(where / CALLING)
    stuck = f", stuck in {call}" if call else ""
    if late == "contact":
        raise NoGpuRun(
            f"{what} gave no answer within {settings.contact_timeout_s:g} s of its first call "
            f"to the runtime (STRATA_HIP_PROBE_TIMEOUT sets the limit){stuck}"
        )
    if late == "run":
        raise NoGpuRun(
            f"{what} gave no answer within {settings.timeout_s:g} s "
            f"(STRATA_RUN_TIMEOUT sets the limit){stuck}"
        )
    if status < 0:
        inside = f" in {call}" if call else ""
        raise NoGpuRun(f"{what} died of {signal.Signals(-status).name}{inside}")
    if status != 0:
        raise NoGpuRun(f"{what} failed (exit status {status}: {last})")
    if not (where / ANSWER).is_file():
        raise NoGpuRun(f"{what} ended without an answer (exit status 0: {last})")
    answer = json.loads(read_bytes(where / ANSWER, CHILD_ANSWER))
    for level, line in answer.get("said", ()):
        say(level, line)
    if "no_gpu" in answer:
        raise NoGpuRun(answer["no_gpu"])
    if "refused" in answer:
        raise StrataError(answer["refused"])
    yield answer, where
