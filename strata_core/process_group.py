"""A child in a process group of its own, which ends as one: whatever the child starts (a
driver's helper process, a daemon a runtime leaves) is in the group, may hold the child's
pipes open, and is killed with it. The child's end is waited for without reaping it, so that
the group's id is still the child's while the group is killed."""

from __future__ import annotations

import os
import signal
import time

#: how often an end is looked for while waiting
POLL_S = 0.01


def lead_new_group() -> None:
    """In a forked child: make this process the leader of a new group."""
    os.setpgid(0, 0)


def exited(pid: int) -> bool:
    """Whether the child ``pid`` has ended (it may not be reaped yet); a child another thread
    reaped has ended too."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None
    except ChildProcessError:
        return True


def exited_within(pid: int, seconds: float) -> bool:
    """Whether the child ``pid`` ends within ``seconds``, waited for without reaping it."""
    deadline = time.monotonic() + seconds
    while not exited(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True


def end_group(pid: int) -> None:
    """Kill every process of the group that the child ``pid`` leads (nothing where none is
    left)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
