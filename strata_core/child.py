"""Run a probe in a child process with a time limit and read its one JSON answer, so that
native code that crashes, hangs or prints cannot take the caller down: a module in a new
Python (run_json_module), or a function in a fork of this process (run_json_forked), which
costs a millisecond instead of a Python start. Either child is ended with the command that
started it, from whatever thread (strata_core.stopping), and its answer is read within
bounded.CHILD_ANSWER."""

from __future__ import annotations

import faulthandler
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from . import bounded, stopping
from .answer_cache import Recorder

#: what is kept of what a child says besides its answer: its last line is why it failed
OUTPUT_TAIL = 1 << 16


class ChildFailed(Exception):
    """The child gave no answer; the message says why in one line."""


class ForkedChild:
    """A forked child as stopping.Child: signalled only until it is reaped (its pid is then
    free for another process), reaped once whichever thread waits first."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.status: int | None = None
        self._lock = threading.Lock()

    def kill(self) -> None:
        with self._lock:
            if self.status is None:
                os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        """Its exit status as subprocess gives it (-N: killed by signal N); where it has not
        ended within ``timeout`` seconds, subprocess.TimeoutExpired."""
        with self._lock:
            if self.status is not None:
                return self.status
        deadline = None if timeout is None else time.monotonic() + timeout
        try:  # waited for unreaped, so that kill() never meets a pid that is free
            while True:
                polling = os.WNOHANG if deadline is not None else 0
                if os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT | polling):
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    raise subprocess.TimeoutExpired(f"forked child {self.pid}", timeout or 0)
                time.sleep(0.01)
        except ChildProcessError:
            pass  # the other thread reaped it and sets its status under the lock
        with self._lock:
            if self.status is None:
                self.status = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
            return self.status


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
    child = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    return _answer(child, child.stdout, child.stderr, timeout_s, what, recorder)


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
    answer_r, answer_w = os.pipe()
    output_r, output_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
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
    os.close(answer_w)
    os.close(output_w)
    answer, output = os.fdopen(answer_r, "rb", buffering=0), os.fdopen(output_r, "rb", 0)
    return _answer(ForkedChild(pid), answer, output, timeout_s, what, recorder)


def _answer(
    child: stopping.Child,
    answer: IO[bytes],
    output: IO[bytes],
    timeout_s: float,
    what: str,
    recorder: Recorder,
) -> dict[str, Any]:
    """The JSON object ``child`` writes on ``answer`` within ``timeout_s`` (what it says on
    ``output`` gives the reason it failed); ChildFailed where there is none. The child never
    outlives this call, and is ended with the command where that is stopped first."""
    deadline = time.monotonic() + timeout_s
    with stopping.running(child):
        with answer, output:
            received, said, late = _read(answer, output, deadline)
        if late or len(received) > bounded.CHILD_ANSWER.limit:
            child.kill()
        try:  # a child that closed its pipes and goes on is not waited for past the deadline
            code = child.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            code, late = child.wait(), True
    if late:
        recorder.refuse(f"{what} timed out")
        raise ChildFailed(f"{what} gave no answer within {timeout_s:g} s")
    if len(received) > bounded.CHILD_ANSWER.limit:
        recorder.refuse(f"{what} failed")
        raise ChildFailed(f"{what} gave an answer {bounded.CHILD_ANSWER.exceeded()}")
    if code != 0:
        recorder.refuse(f"{what} failed")
        last = (said.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        raise ChildFailed(f"{what} failed (exit status {code}: {last})")
    try:
        parsed = json.loads(received)
    except (json.JSONDecodeError, UnicodeDecodeError):
        parsed = None
    if not isinstance(parsed, dict):
        raise ChildFailed(f"{what} printed no JSON object")
    return parsed


def _read(answer: IO[bytes], output: IO[bytes], deadline: float) -> tuple[bytes, bytes, bool]:
    """What a child writes on its two pipes until it closes both; its answer read to one
    byte past bounded.CHILD_ANSWER, of its other output the last OUTPUT_TAIL bytes; and
    whether ``deadline`` passed first."""
    received = {answer.fileno(): bytearray(), output.fileno(): bytearray()}
    with selectors.DefaultSelector() as selector:
        for fd in received:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map() and (left := deadline - time.monotonic()) > 0:
            for key, _ in selector.select(left):
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
    that prints cannot spoil the answer, then write its JSON on the real stdout."""
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
