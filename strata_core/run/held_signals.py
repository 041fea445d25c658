"""SIGINT and SIGTERM held over a step that must not be cut in two, then delivered."""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

HELD = (signal.SIGINT, signal.SIGTERM)
#: what signal.signal takes and gives back
Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


class HeldSignals:
    """``with held:`` (in the main thread) keeps SIGINT and SIGTERM waiting;
    ``held.deliver()`` raises those that came through the handlers in place again, as if they
    came then. A body that fails delivers them as it leaves."""

    def __init__(self) -> None:
        self.came: list[int] = []
        self._previous: dict[int, Handler] = {}

    def __enter__(self) -> HeldSignals:
        self._previous = {signum: signal.signal(signum, self._hold) for signum in HELD}
        return self

    def _hold(self, signum: int, frame: FrameType | None) -> None:
        self.came.append(signum)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        if kind is not None:
            self.deliver()

    def deliver(self) -> None:
        came, self.came = self.came, []
        for signum in dict.fromkeys(came):
            signal.raise_signal(signum)
