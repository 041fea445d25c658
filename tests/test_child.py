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


def test_a_probe_that_closes_its_pipes_and_goes_on_is_not_waited_for_past_its_limit(tmp_path):
    """The wait for a probe child has a limit even where the child closed every pipe without
    ending: it is one line within the probe's time, and the child is ended."""
    from strata_core.child import ChildFailed

    started = tmp_path / "pid"

    def probe(env):
        started.write_text(str(os.getpid()))
        os.closerange(0, 1024)
        time.sleep(60)

    begun = time.monotonic()
    with pytest.raises(ChildFailed, match=r"^probe gave no answer within 1 s$"):
        run_json_forked(probe, {}, 1, "probe", Recorder())
    assert time.monotonic() - begun < 10
    assert not alive(int(started.read_text()))
