"""The `strata-core` console script: answers a repeated read-only command from the answer
cache before importing anything heavy, and otherwise runs the command line."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence

from . import answer_cache
from .commands import COMMANDS
from .streams import GuardedStdout, OutputFailed, Tee


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line; Ctrl-C ends it with 130, a closed pipe (`plan | head`) quietly,
    and standard output that cannot be written with one line and 2, without a traceback."""
    stdout = sys.stdout
    sys.stdout = GuardedStdout(stdout)
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
    if argv in (["--version"], ["-V"]):  # as argparse says it, without building the parser
        from . import __version__

        print(f"strata-core {__version__}")
        return 0
    env = dict(os.environ)
    answer_cache.forget_warnings()
    named = COMMANDS.get(argv[0]) if argv else None
    cacheable = named is not None and named.cached and "--output" not in argv
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
        contextlib.redirect_stdout(Tee(sys.stdout, out)),
        contextlib.redirect_stderr(Tee(sys.stderr, err)),
    ):
        code = run(argv, recorder)
    if code == 0:
        answer_cache.store(argv, env, out.getvalue(), err.getvalue(), recorder)
    return code
