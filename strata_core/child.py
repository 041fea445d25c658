"""Run a probe module in a child process with a time limit and read its one JSON answer, so
that native code that crashes or hangs cannot take the caller down."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

from .answer_cache import Recorder


class ChildFailed(Exception):
    """The child gave no answer; the message says why in one line."""


def run_json_module(
    module: str, env: Mapping[str, str], timeout_s: float, what: str, recorder: Recorder
) -> dict:
    """The child's JSON answer; ChildFailed, with one line saying what went wrong, when it
    gave none (and then the command's answer is not one to cache)."""
    try:
        child = subprocess.run(
            [sys.executable, "-m", module],
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


def answer_json(compute: Callable[[], Any]) -> None:
    """In a probe child: run ``compute`` with file descriptor 1 on stderr, so that native code
    that prints cannot spoil the answer, then write its JSON on the real stdout."""
    answer = os.fdopen(os.dup(1), "w")
    sys.stdout.flush()
    os.dup2(2, 1)
    json.dump(compute(), answer)
    answer.flush()


def child_environment(overrides: Mapping[str, str], owned: Callable[[str], bool]) -> dict:
    """This process's environment, with the variables ``owned`` says are the probe's taken
    from ``overrides`` only (so a test's fake environment is what the probe sees)."""
    env = {k: v for k, v in os.environ.items() if not owned(k)}
    env.update({k: v for k, v in overrides.items() if owned(k)})
    return env
