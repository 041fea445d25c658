"""Whether a run config may be read: not where someone other than this user (or root) can
change it, or replace it in its folder, as git refuses a repository that another user owns.
A run config says what the engine is (``exe``) and what it gets (``env``, ``args``): one
that another user can write runs their program as this user.

STRATA_SAFE_CONFIG trusts run configs all the same: their paths, separated by ``:`` (each as
the link-free path the refusal names), or ``*`` for any, as git's ``safe.directory`` does.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from ..answer_cache import Recorder
from ..errors import StrataError
from ..trust import others_can_write

SAFE_VARIABLE = "STRATA_SAFE_CONFIG"


def check_config_trusted(path: Path, env: Mapping[str, str], recorder: Recorder) -> None:
    """StrataError naming the run config at ``path`` and who else can change it, unless no
    one can or STRATA_SAFE_CONFIG trusts it. The owners and modes looked at are recorded: a
    kept answer depends on them."""
    real = os.path.realpath(path)
    if _named_safe(real, env):
        return
    st = recorder.owner(real)
    if st is None:
        return  # reading it says why it cannot be read
    why = _why_untrusted(path, real, st, recorder)
    if why is not None:
        raise StrataError(
            f"{path}: refused as a run config: {why}, so another user could change what "
            f"strata starts; {SAFE_VARIABLE}={real} trusts it"
        )


def _why_untrusted(path: Path, real: str, st: os.stat_result, recorder: Recorder) -> str | None:
    """Who else can write the file, or replace it in its folder (the folder its name is in,
    and the one the file is in where a link leads there). A folder with the sticky bit (such
    as /tmp) lets no one replace a file they do not own."""
    why = others_can_write(st)
    if why is not None:
        return f"it is {why}"
    folders = dict.fromkeys((os.path.dirname(os.path.abspath(path)), os.path.dirname(real)))
    for folder in folders:
        found = recorder.owner(folder)
        if found is None or found.st_mode & stat.S_ISVTX:
            continue
        why = others_can_write(found)
        if why is not None:
            return f"its folder {folder} is {why}"
    return None


def _named_safe(real: str, env: Mapping[str, str]) -> bool:
    named = [p for p in env.get(SAFE_VARIABLE, "").split(os.pathsep) if p]
    return "*" in named or any(os.path.realpath(p) == real for p in named)
