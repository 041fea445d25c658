"""Run a probe in a child process with a time limit and read its one JSON answer, so that
native code that crashes, hangs or prints cannot take the caller down: a module in a new
Python (run_json_module), or a function in a fork of this process (run_json_forked), which
costs a millisecond instead of a Python start. Either child is ended with the command that
started it, from whatever thread (strata_core.stopping), and its answer is read within
bounded.CHILD_ANSWER."""

from __future__ import annotations

import contextlib
import faulthandler
import json
import math
import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from . import bounded, stopping
from .answer_cache import Recorder
from .native_calls import call_in, mark_calls_in
from .process_group import end_group, exited, exited_within, lead_new_group

#: what is kept of what a child says besides its answer: its last line is why it failed
OUTPUT_TAIL = 1 << 16
#: how often the pipes' reader looks whether the child has ended
GROUP_CHECK_S = 0.05
#: the variable naming the file a probe module marks its native calls in (native_calls)
CALLS_VARIABLE = "STRATA_CHILD_CALLS"


class ChildFailed(Exception):
    """The child gave no answer; the message says why in one line."""


class GroupChild:
    """A child that leads its own process group, as stopping.Child: ``kill`` ends the group,
    and only until the child is reaped (its pid is then free for another process); reaped
    once, by ``reap`` (its exit status as subprocess gives it: -N for signal N), whichever
    thread waits first, after what is left of its group is ended."""

    def __init__(self, pid: int, reap: Callable[[], int]) -> None:
        self.pid = pid
        self.status: int | None = None
        self._reap = reap
        self._lock = threading.Lock()

    def kill(self) -> None:
        with self._lock:
            if self.status is None:
                end_group(self.pid)

    def end_group_if_exited(self) -> None:
        """Where the child has ended (and is not reaped yet), end what is left of its group."""
        with self._lock:
            if self.status is None and exited(self.pid):
                end_group(self.pid)

    def wait(self, timeout: float | None = None) -> int:
        """Its exit status; where it has not ended within ``timeout`` seconds,
        subprocess.TimeoutExpired."""
        if not exited_within(self.pid, math.inf if timeout is None else timeout):
            raise subprocess.TimeoutExpired(f"child {self.pid}", timeout or 0)
        with self._lock:
            if self.status is None:
                end_group(self.pid)
                self.status = self._reap()
            return self.status


@contextlib.contextmanager
def _calls_file() -> Iterator[Path]:
    """Where a child marks the native call it is in (native_calls), in a new private folder
    removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="strata-probe-") as folder:
        yield Path(folder, "calling")


def run_json_module(
    module: str,
    env: Mapping[str, str],
    timeout_s: float,
    what: str,
    recorder: Recorder,
    args: Sequence[str] = (),
) -> dict[str, Any]:
    """The JSON answer of ``python -m module ARGS``; ChildFailed, with one line saying what
    went wrong, when it gave none (and then the command's answer is not one to cache)."""
    with _calls_file() as calls:
        child = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            env=dict(env) | {CALLS_VARIABLE: str(calls)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,
        )
        assert child.stdout is not None and child.stderr is not None
        spawned = GroupChild(child.pid, child.wait)
        return _answer(spawned, child.stdout, child.stderr, timeout_s, what, recorder, calls)


def run_json_forked(
    function: Callable[[Mapping[str, str]], Any],
    env: Mapping[str, str],
    timeout_s: float,
    what: str,
    recorder: Recorder,
) -> dict[str, Any]:
    """``function(env)``'s JSON answer, computed in a fork of this process whose environment
    is ``env`` and whose stdout and stderr are kept from the caller's; ChildFailed as
    :func:`run_json_module` says it. What the child needs is imported before the fork, and
    the child ends with os._exit, so that none of this process's exit handlers or buffers
    run twice."""
    with _calls_file() as calls:
        return _forked(function, env, timeout_s, what, recorder, calls)


def _forked(
    function: Callable[[Mapping[str, str]], Any],
    env: Mapping[str, str],
    timeout_s: float,
    what: str,
    recorder: Recorder,
    calls: Path,
) -> dict[str, Any]:
    answer_r, answer_w = os.pipe()
    output_r, output_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            lead_new_group()
            with contextlib.suppress(OSError):  # unmarked, the probe still answers
                mark_calls_in(calls)
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # in a group of its own: no terminal
            os.close(answer_r)
            os.close(output_r)
            os.dup2(output_w, 1)
            os.dup2(output_w, 2)
            faulthandler.disable()  # a crash here is the parent's one line, not a dump elsewhere
            os.environ.clear()
            os.environ.update(env)
            data = json.dumps(function(env)).encode()
            while data:
                data = data[os.write(answer_w, data) :]
            status = 0
        except BaseException as exc:
            os.write(output_w, f"{type(exc).__name__}: {exc}\n".encode(errors="replace"))
        finally:
            os._exit(status)
    with contextlib.suppress(OSError):  # as the child does: whichever runs first
        os.setpgid(pid, pid)
    os.close(answer_w)
    os.close(output_w)
    answer, output = os.fdopen(answer_r, "rb", buffering=0), os.fdopen(output_r, "rb", 0)

    def reap() -> int:
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    return _answer(GroupChild(pid, reap), answer, output, timeout_s, what, recorder, calls)


def _answer(
    child: GroupChild,
    answer: IO[bytes],
    output: IO[bytes],
    timeout_s: float,
    what: str,
    recorder: Recorder,
    calls: Path,
) -> dict[str, Any]:
    """The JSON object ``child`` writes on ``answer`` within ``timeout_s`` (what it says on
    ``output`` gives the reason it failed, ``calls`` the native call it was in); ChildFailed
    where there is none. The child never outlives this call, and is ended with the command
    where that is stopped first."""
    deadline = time.monotonic() + timeout_s
    with stopping.running(child):
        with answer, output:
            received, said, late = _read(answer, output, deadline, child)
        if late or len(received) > bounded.CHILD_ANSWER.limit:
            child.kill()
        try:  # a child that closed its pipes and goes on is not waited for past the deadline
            code = child.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            code, late = child.wait(), True
    call = call_in(calls)
    if late:
        recorder.refuse(f"{what} timed out")
        stuck = f", stuck in {call}" if call else ""
        raise ChildFailed(f"{what} gave no answer within {timeout_s:g} s{stuck}")
    if len(received) > bounded.CHILD_ANSWER.limit:
        recorder.refuse(f"{what} failed")
        raise ChildFailed(f"{what} gave an answer {bounded.CHILD_ANSWER.exceeded()}")
    if code != 0:
        recorder.refuse(f"{what} failed")
        last = (said.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        inside = f" in {call}" if call else ""
        raise ChildFailed(f"{what} failed (exit status {code}: {last}){inside}")
    try:
        parsed = json.loads(received)
    except (json.JSONDecodeError, UnicodeDecodeError):
        parsed = None
    if not isinstance(parsed, dict):
        raise ChildFailed(f"{what} printed no JSON object")
    return parsed


def _read(
    answer: IO[bytes], output: IO[bytes], deadline: float, child: GroupChild
) -> tuple[bytes, bytes, bool]:
    """What ``child`` writes on its two pipes until they close (once it has ended, what it
    started, which may hold them, is ended too); its answer read to one byte past
    bounded.CHILD_ANSWER, of its other output the last OUTPUT_TAIL bytes; and whether
    ``deadline`` passed first."""
    received = {answer.fileno(): bytearray(), output.fileno(): bytearray()}
    with selectors.DefaultSelector() as selector:
        for fd in received:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map() and (left := deadline - time.monotonic()) > 0:
            child.end_group_if_exited()
            for key, _ in selector.select(min(left, GROUP_CHECK_S)):
                chunk = os.read(key.fd, bounded.CHUNK)
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                received[key.fd] += chunk
                if key.fd == output.fileno():
                    del received[key.fd][:-OUTPUT_TAIL]
                elif len(received[key.fd]) > bounded.CHILD_ANSWER.limit:
                    return bytes(received[key.fd]), bytes(received[output.fileno()]), False
        late = bool(selector.get_map())
    return bytes(received[answer.fileno()]), bytes(received[output.fileno()]), late


def answer_json(compute: Callable[[], Any]) -> None:
    """In a probe child: run ``compute`` with file descriptor 1 on stderr, so that native code
    that prints cannot spoil the answer, then write its JSON on the real stdout. Its native
    calls are marked where its parent named a file (CALLS_VARIABLE)."""
    if os.environ.get(CALLS_VARIABLE):
        with contextlib.suppress(OSError):  # unmarked, the probe still answers
            mark_calls_in(Path(os.environ[CALLS_VARIABLE]))
    answer = os.fdopen(os.dup(1), "w")
    sys.stdout.flush()
    os.dup2(2, 1)
    json.dump(compute(), answer)
    answer.flush()


def child_environment(overrides: Mapping[str, str], owned: Callable[[str], bool]) -> dict[str, Any]:
    """This process's environment, with the variables ``owned`` says are the probe's taken
    from ``overrides`` only (so a test's fake environment is what the probe sees)."""
    env = {k: v for k, v in os.environ.items() if not owned(k)}
    env.update({k: v for k, v in overrides.items() if owned(k)})
    return env
