"""Run a probe in a child process with a time limit and read its one JSON answer, so that
native code that crashes, hangs or prints cannot take the caller down: a module in a new
Python (run_json_module), or a function in a fork of this process (run_json_forked), which
costs a millisecond instead of a Python start."""

from __future__ import annotations

import faulthandler
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .answer_cache import Recorder


class ChildFailed(Exception):
    """The child gave no answer; the message says why in one line."""


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
    try:
        child = subprocess.run(
            [sys.executable, "-m", module, *args],
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        recorder.refuse(f"{what} timed out")
        raise ChildFailed(f"{what} gave no answer within {timeout_s:g} s") from None
    if child.returncode != 0:
        recorder.refuse(f"{what} failed")
        last = (child.stderr.strip().splitlines() or ["no message"])[-1]
        raise ChildFailed(f"{what} failed (exit status {child.returncode}: {last})")
    try:
        answer = json.loads(child.stdout)
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        raise ChildFailed(f"{what} printed no JSON object")
    return answer


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
    received = {answer_r: bytearray(), output_r: bytearray()}
    deadline = time.monotonic() + timeout_s
    hung = True  # until the child is seen to close its pipes: a Ctrl-C here ends it too
    try:
        with selectors.DefaultSelector() as selector:
            for fd in received:
                selector.register(fd, selectors.EVENT_READ)
            while selector.get_map() and (left := deadline - time.monotonic()) > 0:
                for key, _ in selector.select(left):
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        received[key.fd] += chunk
                    else:
                        selector.unregister(key.fd)
            hung = bool(selector.get_map())
    finally:
        os.close(answer_r)
        os.close(output_r)
        if hung:
            os.kill(pid, signal.SIGKILL)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if hung:
        recorder.refuse(f"{what} timed out")
        raise ChildFailed(f"{what} gave no answer within {timeout_s:g} s")
    if code != 0:
        recorder.refuse(f"{what} failed")
        said = received[output_r].decode(errors="replace").strip().splitlines()
        raise ChildFailed(f"{what} failed (exit status {code}: {(said or ['no message'])[-1]})")
    try:
        answer = json.loads(received[answer_r])
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        raise ChildFailed(f"{what} printed no JSON object")
    return answer


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
