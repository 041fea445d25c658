"""Whether anyone but this user can write a file or a folder: the check made before strata
uses what another user could have put there (the answer cache's folder and entries, a run
config and its folder). The rules are OpenSSH's for the files it trusts: the owner is this
user or root; no one else may write it, and a group may only where that group is its owner's
alone (a user private group). git refuses a repository owned by another user, and pip a cache
folder it does not own, for the same reason.

Light on imports: the answer cache checks its folder before anything heavy is imported.
"""

from __future__ import annotations

import os
import stat


def others_can_write(st: os.stat_result) -> str | None:
    """Why someone other than this user (or root) can write what ``st`` describes, such as
    ``owned by nobody``, or None where no one can."""
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid not in (os.geteuid(), 0):
        return f"owned by {_user_name(st.st_uid)}"
    if mode & stat.S_IWOTH:
        return f"writable by everyone (mode {mode:04o})"
    if mode & stat.S_IWGRP and not _private_group(st.st_gid, st.st_uid):
        return f"writable by the group {_group_name(st.st_gid)} (mode {mode:04o})"
    return None


def _private_group(gid: int, owner: int) -> bool:
    """Whether the group ``gid`` has the user ``owner`` as its one member, as OpenSSH counts
    them: the users whose primary group it is, and its listed members."""
    import grp
    import pwd

    try:
        group = grp.getgrgid(gid)
        name = pwd.getpwuid(owner).pw_name
    except KeyError:
        return False
    primary = {user.pw_name for user in pwd.getpwall() if user.pw_gid == gid}
    return (primary | set(group.gr_mem)) == {name}


def _user_name(uid: int) -> str:
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _group_name(gid: int) -> str:
    import grp

    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
