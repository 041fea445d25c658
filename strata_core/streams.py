"""The console script's standard streams: a stream written to several at once (the answer
cache's copy of a command's output) and standard output whose write errors end the command
with one line. Light on imports: a repeated command answered from the cache loads this."""

from __future__ import annotations

import io

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on the cache's path
if TYPE_CHECKING:
    from typing import TextIO


class Tee(io.TextIOBase):
    """Writes each text to every one of ``streams``."""

    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


class OutputFailed(BaseException):
    """Standard output cannot be written (a full disk, a closed descriptor). Not an Exception,
    so that no command takes it for an error of its own."""


class GuardedStdout:
    """Standard output whose write errors (other than a reader that went away) become
    OutputFailed; ``None`` where the descriptor was closed when Python started."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream

    def _call(self, method: str, *args: object) -> object:
        if self.stream is None:
            raise OutputFailed("it is closed")
        try:
            return getattr(self.stream, method)(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputFailed(exc.strerror or str(exc)) from None

    def write(self, text: str) -> object:
        return self._call("write", text)

    def flush(self) -> object:
        return self._call("flush")

    def isatty(self) -> bool:
        return self.stream is not None and self.stream.isatty()

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)
