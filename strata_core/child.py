"""Run a probe module in a child process with a time limit and read its one JSON answer, so
that native code that crashes or hangs cannot take the caller down."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping

from .answer_cache import Recorder


def run_json_module(
    module: str, env: Mapping[str, str], timeout_s: float, what: str, recorder: Recorder
) -> tuple[dict | None, str | None]:
    """(answer, None) or (None, one line saying what went wrong). An answer that failed is
    not one to cache."""
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
        return None, f"{what} gave no answer within {timeout_s:g} s"
    if child.returncode != 0:
        recorder.refuse(f"{what} failed")
        last = (child.stderr.strip().splitlines() or ["no message"])[-1]
        return None, f"{what} failed (exit status {child.returncode}: {last})"
    try:
        return json.loads(child.stdout), None
    except json.JSONDecodeError:
        return None, f"{what} printed no JSON"


def child_environment(overrides: Mapping[str, str], owned: Callable[[str], bool]) -> dict:
    """This process's environment, with the variables ``owned`` says are the probe's taken
    from ``overrides`` only (so a test's fake environment is what the probe sees)."""
    env = {k: v for k, v in os.environ.items() if not owned(k)}
    env.update({k: v for k, v in overrides.items() if owned(k)})
    return env
