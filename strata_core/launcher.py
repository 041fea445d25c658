"""The `strata-core` console script: answers a repeated read-only command from the answer
cache before importing anything heavy, and otherwise runs the command line."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence

from . import answer_cache

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on the cache's path
if TYPE_CHECKING:
    from typing import TextIO

CACHEABLE = ("plan", "devices")


class _Tee(io.TextIOBase):
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


class _Stdout:
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line; Ctrl-C ends it with 130, a closed pipe (`plan | head`) quietly,
    and standard output that cannot be written with one line and 2, without a traceback."""
    stdout = sys.stdout
    sys.stdout = _Stdout(stdout)  # type: ignore[assignment]
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _answer(argv)
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        return 0
    except OutputFailed as failed:
        from . import log

        log.configure(fmt=log.format_named(argv))  # an answer from the cache configured none
        log.error(f"cannot write to standard output ({failed})")
        if stdout is not None:  # what is still buffered goes nowhere at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        return 2
    finally:
        sys.stdout = stdout


def _answer(argv: list[str]) -> int:
    if argv == ["--version"]:  # what argparse says, without building the command line's parser
        from . import __version__

        print(f"strata-core {__version__}")
        return 0
    env = dict(os.environ)
    cacheable = argv[:1] and argv[0] in CACHEABLE and "--output" not in argv
    if cacheable:
        entry = answer_cache.lookup(argv, env)
        if entry is not None:
            sys.stdout.write(entry["stdout"])
            sys.stderr.write(entry["stderr"])
            return 0
    import contextlib

    from .cli.main import main as run

    if not cacheable:
        return run(argv)
    out, err = io.StringIO(), io.StringIO()
    recorder = answer_cache.Recorder()
    with (
        contextlib.redirect_stdout(_Tee(sys.stdout, out)),
        contextlib.redirect_stderr(_Tee(sys.stderr, err)),
    ):
        code = run(argv, recorder)
    if code == 0:
        answer_cache.store(argv, env, out.getvalue(), err.getvalue(), recorder)
    return code
