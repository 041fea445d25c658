"""`run -- ENGINE`: strata-core becomes the engine as a shell starts a program. It execs, so
the engine has strata-core's pid, a signal sent to strata-core reaches it, and its exit status
or its death by a signal is the process's own. The engine finds every signal that Python or
strata set aside at its default and none blocked; one that cannot start is 127 (not found, an
empty name included) or 126 (found but not executable), as bash says."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence

from .. import log
from ..plan.plan import Plan

#: the signals Python ignores as it starts, whatever it inherited (as subprocess's
#: restore_signals puts back before a child's exec); SIGXFSZ also by cli/main.py. Any other
#: signal ignored here was ignored by whoever started strata-core (nohup: SIGHUP), and a
#: shell would leave it ignored too
SET_ASIDE = (signal.SIGPIPE, signal.SIGXFSZ)


def start_engine(plan: Plan, env: Mapping[str, str], engine: Sequence[str]) -> int:
    """Become the engine ``engine`` (its program and the user's arguments), with the plan's
    environment on top of ``env`` and the plan's arguments after the user's. Only a failure
    to start returns: 127 when the engine is not found, 126 when it cannot be executed."""
    if not engine[0]:
        log.error("cannot start the engine '': not found (a program's name is not empty)")
        return 127
    command = [*engine, *plan.engine_args()]
    sys.stdout.flush()
    sys.stderr.flush()
    put_back = signals_as_a_shell_leaves_them()
    try:
        os.execvpe(command[0], command, dict(env) | plan.engine_env())
    except OSError as exc:
        put_back()
        not_found = isinstance(exc, FileNotFoundError)
        why = "not found" if not_found else exc.strerror or exc
        log.error(f"cannot start the engine {engine[0]}: {why}")
        return 127 if not_found else 126


def signals_as_a_shell_leaves_them() -> Callable[[], None]:
    """Put the signals of SET_ASIDE at their default and block none, as exec is to pass them
    on; what it gives puts each back as it was (after an exec that failed)."""
    dispositions = {number: signal.signal(number, signal.SIG_DFL) for number in SET_ASIDE}
    mask = signal.pthread_sigmask(signal.SIG_SETMASK, ())

    def put_back() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for number, disposition in dispositions.items():
            signal.signal(number, disposition)

    return put_back
