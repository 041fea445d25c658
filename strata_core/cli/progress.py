"""A progress line for a person at a terminal: what a long command is doing, drawn on stderr
once a phase has lasted a second and redrawn with its time until the phase ends, as uv and
pip draw theirs. Whatever else is written to stderr meanwhile goes above it."""

from __future__ import annotations

import shutil
import sys
import threading
import time
from types import TracebackType
from typing import TextIO

from ..log import PROG

#: how long a phase runs before its line is drawn, and how often the line is redrawn
DELAY_S = 1.0
TICK_S = 0.1
ERASE = "\r\x1b[K"


class ProgressLine:
    """Call it with what the command is doing (``what``, a phase) and how far it is
    (``detail``); use it as a context manager around the work, during which it owns
    ``sys.stderr``."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.what: str | None = None
        self.detail = ""
        self.since = 0.0
        self.shown = ""  # the line on the screen
        self.stopped = threading.Event()
        self.ticker = threading.Thread(target=self._tick, daemon=True)
        self.replaced: TextIO = stream

    def __call__(self, what: str, detail: str = "") -> None:
        with self.lock:
            if what != self.what:
                self.what, self.since = what, time.monotonic()
                self._erase()
            self.detail = detail
            self._draw()

    def __enter__(self) -> ProgressLine:
        self.replaced = sys.stderr
        sys.stderr = _Above(self)
        self.ticker.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stopped.set()
        self.ticker.join()
        with self.lock:
            self._erase()
        sys.stderr = self.replaced

    def _tick(self) -> None:
        while not self.stopped.wait(TICK_S):
            with self.lock:
                self._draw()

    def _draw(self) -> None:
        if self.what is None:
            return
        took = time.monotonic() - self.since
        if took < DELAY_S:
            return
        detail = f": {self.detail}" if self.detail else ""
        line = f"{PROG}: {self.what}{detail} ({took:.0f} s)"
        line = line[: shutil.get_terminal_size().columns - 1]
        if line != self.shown:
            self.stream.write("\r" + line + "\x1b[K")
            self.stream.flush()
            self.shown = line

    def _erase(self) -> None:
        if self.shown:
            self.stream.write(ERASE)
            self.stream.flush()
            self.shown = ""

    def write_above(self, text: str) -> int:
        """Write ``text`` where the progress line is; the line comes back at the next tick."""
        with self.lock:
            self._erase()
            written = self.stream.write(text)
            self.stream.flush()
        return written


class _Above:
    """sys.stderr while a progress line is drawn: every write goes above the line."""

    def __init__(self, line: ProgressLine) -> None:
        self.line = line

    def write(self, text: str) -> int:
        return self.line.write_above(text)

    def flush(self) -> None:
        self.line.stream.flush()

    def __getattr__(self, name: str) -> object:
        return getattr(self.line.stream, name)
