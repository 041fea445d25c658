"""Runs `strata-core` as a user does, with its output and exit status: in this process where
the command needs no process of its own, as click's CliRunner does (the environment, the
working folder, the standard streams, the signal dispositions and the log's level and format
set for the call and given back after it), else in a new Python: `run -- ENGINE`, which becomes the engine, a command
whose PYTHONPATH adds packages (plugins a test installs), or where a test asks for one."""

import contextlib
import io
import os
import signal
import subprocess
import sys
import traceback

from strata_core import launcher, log


def strata_core(*args, env, check=True, cwd=None, process=False):
    """Run ``strata-core ARGS``; no output may hold a traceback, and with ``check`` the exit
    status must be 0."""
    if process or becomes_the_engine(args) or env.get("PYTHONPATH") != os.environ.get("PYTHONPATH"):
        result = subprocess.run(
            [sys.executable, "-m", "strata_core", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            cwd=cwd,
        )
    else:
        result = in_process(args, env, cwd)
    assert "Traceback" not in result.stderr
    if check:
        assert result.returncode == 0, result.stderr
    return result


def becomes_the_engine(args) -> bool:
    """`run ... -- ENGINE`: the command execs, which only a process of its own may do."""
    return "run" in args and "--" in args[args.index("run") :]


#: what a command may change of the process, each given back after it
SIGNALS = (signal.SIGXFSZ, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE)


def in_process(args, env, cwd) -> subprocess.CompletedProcess:
    out, err = io.StringIO(), io.StringIO()
    environ, folder = dict(os.environ), os.getcwd()
    dispositions = {number: signal.getsignal(number) for number in SIGNALS}
    os.environ.clear()
    os.environ.update(env)
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = _main(list(args), err)
    finally:
        os.chdir(folder)
        os.environ.clear()
        os.environ.update(environ)
        for number, disposition in dispositions.items():
            signal.signal(number, disposition)
        log.configure()  # the command's -q, -v or --log-format ends with it
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def _main(argv, err) -> int:
    """The console script's status, as Python's exit would give it."""
    try:
        return launcher.main(argv)
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=err)
        return 1
    except Exception:
        traceback.print_exc(file=err)
        return 1
