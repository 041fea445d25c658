"""Runs `strata-core` as a user does: a separate process, with its output and exit status."""

import subprocess
import sys


def strata_core(*args, env, check=True, cwd=None):
    """Run ``python -m strata_core ARGS``; no output may hold a traceback, and with ``check``
    the exit status must be 0."""
    result = subprocess.run(
        [sys.executable, "-m", "strata_core", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )
    assert "Traceback" not in result.stderr
    if check:
        assert result.returncode == 0, result.stderr
    return result
