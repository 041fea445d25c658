"""The one way strata writes a file: run configs (`plan --toml --output`, `tune --switches`),
tuning tables (`tune`) and the answer cache's entries (answers, the plugin index, the host
threads' measurement); and a folder of files (the example machines' sysfs trees), which is
written in a new private folder, every file synced, and renamed into place whole.

The data goes to a new file in the target's folder, created exclusively under a name no one
can guess (a link planted at a predictable name redirects nothing), and is synced to the
disk; then the file takes the target's name (a rename; where the target must not exist yet,
a hard link, which fails where anything has the name: no check-then-write), and the folder is
synced. A reader, and the disk after a crash or a SIGKILL, sees the old file or the new one,
never part of either. A file that is replaced keeps its owner (where the writer may give it:
as root; the group where it is one of the writer's) and its mode, as GNU ``sed -i`` does; a
new one gets the mode the umask gives. strata's private files (``private``) are made 0600 in
a folder made 0700, whoever had the name before. Links on the way are followed, as the
kernel follows them (the target's own only where it is replaced, and never for a private
file: the name itself is replaced, whatever it is); a loop of them is an error like any
other. A write that fails
leaves the old file as it was and no temporary file behind, and is one StrataError naming
the file and the reason.

Not written this way, on purpose: the scratch files a command and its child exchange in a
private temporary folder that the command removes (strata_core.run.child_process), and the
build hook's manifest (strata_core.hip.build_hook, which plugin sdists carry as a file of its
own, without strata_core).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .errors import StrataError

#: how the temporary file is opened: created here and now, never through a link
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
#: what a hard link fails with where the file system has none (FAT, some network ones)
_NO_HARD_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV)


class Exists(StrataError):
    """The target exists, and the write may not replace it."""


def write_atomic(
    path: Path | str, data: str | bytes, make_folders: bool = False, replace: bool = True
) -> None:
    """Write ``data`` (text as UTF-8) to ``path``; its folder must exist unless
    ``make_folders`` (a folder the user asked for, or strata's own data folder) lets it be
    made. Without ``replace``, a path that exists (a dangling link too) is Exists."""
    try:
        put(path, data.encode() if isinstance(data, str) else data, replace, make_folders)
    except FileExistsError:
        raise Exists(f"{path}: the file exists; nothing was changed") from None
    except OSError as exc:
        raise StrataError(
            f"{path}: cannot write ({exc.strerror or exc}); nothing was changed"
        ) from None


def put(
    path: Path | str,
    data: bytes,
    replace: bool = True,
    make_folders: bool = False,
    private: bool = False,
) -> None:
    """Write ``data`` to ``path`` as the module says; OSError where it cannot be. A private
    file (strata's own, in its own folder) is never written through a link at its name: the
    name itself is replaced, whatever it is now."""
    target = resolved(path, follow_last=replace and not private)
    folder = os.path.dirname(target)
    _check_folder(folder, make_folders, private)
    old = _existing(target) if replace and not private else None
    fd, temp = _create_temp(folder)
    try:
        _fill(fd, data, old, private)
        if replace:
            os.replace(temp, target)
        else:
            _link_new(temp, target)
        sync_folder(folder)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise


def resolved(path: Path | str, follow_last: bool) -> str:
    """The absolute path with every link of its folders followed (and the last name's with
    ``follow_last``), as the kernel resolves it: a ``..`` after a link leads into the parent
    of the link's target, not back beside the link; OSError ELOOP naming where a loop of links
    is."""
    absolute = os.path.join(os.getcwd(), os.fspath(path))  # not normalized: ".." is the kernel's
    folder = os.path.realpath(os.path.dirname(absolute))
    target = os.path.join(folder, os.path.basename(absolute))
    if follow_last:
        target = os.path.realpath(target)
    # realpath leaves a link it cannot resolve in place: that is a loop
    checked = Path(target) if follow_last else Path(folder)
    for part in (checked, *checked.parents):
        if part.is_symlink():
            raise OSError(errno.ELOOP, f"a loop of symbolic links at {part}")
    return target


def _check_folder(folder: str, make_folders: bool, private: bool) -> None:
    """The target's folder, made where it is missing and ``make_folders`` lets it be."""
    if os.path.isdir(folder):
        return
    blocking = next((p for p in Path(folder, "-").parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise NotADirectoryError(errno.ENOTDIR, f"{blocking} is a file, not a folder")
    if not make_folders:
        raise FileNotFoundError(errno.ENOENT, f"no folder {folder}")
    os.makedirs(folder, 0o700 if private else 0o777, exist_ok=True)


def _existing(target: str) -> os.stat_result | None:
    """The stat of the file that is replaced, None where there is none."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "it is a folder")
    return st


def _create_temp(folder: str) -> tuple[int, str]:
    """A new empty file in ``folder`` under a name no one can guess, created exclusively: its
    descriptor and path."""
    while True:
        temp = os.path.join(folder, f".strata-{os.urandom(8).hex()}.tmp")
        try:
            return os.open(temp, _CREATE, 0o600), temp
        except FileExistsError:
            continue


def _fill(fd: int, data: bytes, old: os.stat_result | None, private: bool) -> None:
    """Write ``data`` into the temporary file, give it the owner and mode it is to have, sync
    it and close it."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if old is not None:
            _keep_owner(fd, old)
        os.fchmod(fd, 0o600 if private else _mode(old))
        os.fsync(fd)
    finally:
        os.close(fd)


def _keep_owner(fd: int, old: os.stat_result) -> None:
    """The replaced file's owner and group, or as much of them as the writer may give."""
    for uid in (old.st_uid, -1):
        try:
            os.fchown(fd, uid, old.st_gid)
            return
        except PermissionError:
            continue


def _mode(old: os.stat_result | None) -> int:
    if old is not None:
        return stat.S_IMODE(old.st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _link_new(temp: str, target: str) -> None:
    """Give the written file the name ``target``, which must be free: FileExistsError where
    anything has it. Where the file system has no hard links, the name is taken by an empty
    file created exclusively, which the written one then replaces."""
    try:
        os.link(temp, target)
    except FileExistsError:
        if os.path.isdir(target):  # said as it is, after the fact: nothing was checked first
            raise IsADirectoryError(errno.EISDIR, "it is a folder") from None
        raise
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        os.close(os.open(target, _CREATE, 0o600))
        os.replace(temp, target)
    else:
        os.unlink(temp)


def publish_folder(building: Path | str, target: Path | str) -> None:
    """Give the folder ``building``, written whole by this command in a folder of its own
    beside ``target``, the name ``target``, to last as a file written here lasts: every file
    and folder in it synced, then renamed, then the folder it is in synced. OSError where
    the name is taken by a folder that holds anything."""
    for folder, _, names in os.walk(building, topdown=False):
        for name in names:
            path = os.path.join(folder, name)
            if not os.path.islink(path):  # a link is synced with its folder's entries
                _sync(path, os.O_RDONLY)
        sync_folder(folder)
    os.rename(building, target)
    sync_folder(os.path.dirname(os.path.abspath(target)))


def sync_folder(folder: str) -> None:
    """Sync a folder's entries (a rename in it) to the disk; a file system that cannot sync a
    folder (EINVAL) has nothing more to do."""
    _sync(folder, os.O_RDONLY | os.O_DIRECTORY)


def _sync(path: str, flags: int) -> None:
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
    finally:
        os.close(fd)
