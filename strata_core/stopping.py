"""A stopped command leaves no child behind: every probe child is registered while it runs
(``running``), whatever thread started it, and the main thread, which alone receives SIGINT
and SIGTERM, ends them all and waits for them before the command exits
(``ended_when_stopped``). A child started after that, by a thread that had not yet heard, is
ended as it is registered."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Protocol

#: the signals that stop a command: Ctrl-C and kill's default
STOPPING = (signal.SIGINT, signal.SIGTERM)


class Child(Protocol):
    """A child process as subprocess.Popen is one: ``kill`` it, ``wait`` for its status (at
    most ``timeout`` seconds: subprocess.TimeoutExpired). Both may be called from two threads,
    and ``kill`` after the child ended does nothing."""

    def kill(self) -> None: ...

    def wait(self, timeout: float | None = None) -> int: ...


_lock = threading.Lock()
_running: list[Child] = []
_stopped = False


@contextlib.contextmanager
def running(child: Child) -> Iterator[None]:
    """``child`` is ended with the command while the body runs (at once where the command
    was stopped already), and ended and waited for where the body fails."""
    with _lock:
        _running.append(child)
        if _stopped:
            child.kill()
    try:
        yield
    except BaseException:
        child.kill()
        child.wait()
        raise
    finally:
        with _lock:
            _running.remove(child)


def end_all() -> None:
    """Kill every running child and wait until each has ended; a child registered later is
    killed as it is registered."""
    global _stopped
    with _lock:
        _stopped = True
        children = list(_running)
    for child in children:
        child.kill()
    for child in children:
        child.wait()


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM ends the command as Ctrl-C does, by an exception in the main thread."""
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def ended_when_stopped() -> Iterator[None]:
    """In the main thread, around a command: SIGTERM ends the body as Ctrl-C does (exit
    status 143), and a body so ended first ends every child still running, SIGINT and
    SIGTERM ignored meanwhile; a child registered after that, by a thread that goes on while
    the command exits, is ended as it is registered. Elsewhere than the main thread, the
    body alone."""
    global _stopped
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with _lock:
        _stopped = False
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    except (KeyboardInterrupt, SystemExit):
        handlers = {signum: signal.signal(signum, signal.SIG_IGN) for signum in STOPPING}
        try:
            end_all()
        finally:
            for signum, handler in handlers.items():
                signal.signal(signum, handler)
        raise
    finally:
        if previous is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, previous)
