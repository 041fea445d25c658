"""The probe children: one that is still running when its parent is interrupted ends with it."""

import os
import signal
import time

import pytest

from strata_core.answer_cache import Recorder
from strata_core.child import run_json_forked


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_ctrl_c_while_a_forked_probe_runs_ends_the_probe(tmp_path):
    started = tmp_path / "pid"

    def probe(env):
        started.write_text(str(os.getpid()))
        time.sleep(60)

    def ctrl_c(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_json_forked(probe, {}, 30, "probe", Recorder())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    pid = int(started.read_text())
    left_running = alive(pid)
    if left_running:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert not left_running
