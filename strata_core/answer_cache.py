"""A cache of the answers of read-only commands (`plan`, `devices`), so that asking again
costs about one Python start.

An answer is stored with everything it depended on, each as the command read it: the files
it read (by content: sysfs attributes have no useful mtime; a missing one as missing), the
directories it listed, the owner and mode of the run config and its folder, and the Python
modules and ``sys.path`` folders that produced it (by stat). It is given again only while
every one of them is unchanged. An answer is not kept where an input changed while the
command ran (between its stat before the read and after it, between two reads, or between
the read and the store), nor where one could not be read as a regular file. Only modules
that cost nothing to import are used here (entries are marshal files, not JSON), so that a
hit stays fast.

The cache folder and each entry are used only where no one but this user (or root) can
write them (strata_core.trust): one warning, and the command goes on uncached, as pip does
with a cache folder it does not own. Entries are written by strata_core.files, private
(0600, in a folder made 0700).

``STRATA_CACHE=0`` turns the cache off; ``STRATA_CACHE_DIR`` moves it (default:
``$XDG_CACHE_HOME/strata`` or ``~/.cache/strata``).
"""

from __future__ import annotations

import errno
import marshal
import os
import stat
import sys
import zlib

from . import bounded

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on the cache's path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

FORMAT = 2
#: Environment variables that can change an answer: strata's own, the ROCm runtime's, where
#: the HIP runtime is looked for, and OpenMP's (the host backend's threads).
ENV_PREFIXES = (
    "STRATA_",
    "HSA_",
    "ROCR_",
    "HIP_",
    "CUDA_VISIBLE_DEVICES",
    "ROCM_PATH",
    "LD_LIBRARY_PATH",
    "OMP_",
)

#: The most the cache folder may hold; the least recently used answers go first.
MAX_BYTES = 8 << 20

#: the warnings said about the cache folder in this command, each said once; an answer of a
#: command that said one is not kept
_warned: set[str] = set()


class Recorder:
    """Reads what an answer depends on, and remembers each input as it was read: a file by
    its content (a missing one as missing), a large file by its stat, a folder by its
    entries. The pipeline reads every input through one recorder, so that a stored answer is
    checked against all of them by construction. An input that changes while it is read, or
    between two reads, and one that cannot be read as a regular file, make the answer one
    that is not kept."""

    def __init__(self) -> None:
        self.files: dict[str, list[int] | str | None] = {}
        self.stats: dict[str, list[int] | None] = {}
        self.dirs: dict[str, list[str] | None] = {}
        self.owners: dict[str, list[int] | None] = {}
        self.refusals: list[str] = []

    def read_text(
        self, path: str | os.PathLike[str], bound: bounded.Bound = bounded.DOCUMENT
    ) -> str:
        """The file's text (OSError, UnicodeDecodeError as ``open`` raises them, newlines
        read as ``open`` reads them; a file past ``bound`` is bounded.TooLarge, read no
        further). Only a regular file is read: a FIFO, a device or a folder is an OSError,
        and the answer is not kept."""
        name = os.fspath(path)
        try:
            data, opened = read_regular(name, bound)
        except FileNotFoundError:
            self._note(self.files, name, None)
            raise
        except OSError as exc:
            self.refuse(f"{name} cannot be read as a regular file ({exc.strerror or exc})")
            raise
        if _identity(opened) != _identity(_stat(name)):
            self.refuse(f"{name} changed while it was read")
        self._note(self.files, name, _digest(data))
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")

    def is_file(self, path: str | os.PathLike[str]) -> bool:
        """Whether a regular file is there; what it holds is recorded. Something there that
        cannot be read as a regular file (a FIFO, a folder) makes the answer one not kept."""
        name = os.fspath(path)
        state = file_state(name)
        self._note(self.files, name, state)
        found = os.path.isfile(name)
        if isinstance(state, str) or found != isinstance(state, list):
            self.refuse(f"{name} cannot be read as a regular file")
        return found

    def list_dir(self, path: str | os.PathLike[str]) -> list[str]:
        """The folder's entries, sorted; empty where it is missing or no folder."""
        name = os.fspath(path)
        names = listing(name)
        self._note(self.dirs, name, names)
        return names or []

    def is_dir(self, path: str | os.PathLike[str]) -> bool:
        name = os.fspath(path)
        self._note(self.dirs, name, listing(name))
        return os.path.isdir(name)

    def stat(self, path: str | os.PathLike[str]) -> os.stat_result | None:
        """The file's stat, or None where it is missing; recorded as :func:`stat_of` says."""
        name = os.fspath(path)
        st = _stat(name)
        self._note(self.stats, name, _stat_state(st))
        return st

    def owner(self, path: str | os.PathLike[str]) -> os.stat_result | None:
        """The stat of a file or folder whose owner and mode the answer depends on (who may
        write it), or None where it is missing; those are recorded (:func:`owner_of`)."""
        name = os.fspath(path)
        st = _stat(name)
        self._note(self.owners, name, _owner_state(st))
        return st

    def refuse(self, reason: str) -> None:
        """This answer must not be cached (it depends on something that cannot be checked)."""
        self.refusals.append(reason)

    def _note(self, table: dict[str, Any], name: str, state: Any) -> None:
        """Record ``state`` as the input's; one that differs from a state recorded before
        means the input changed while the command ran."""
        if table.setdefault(name, state) != state:
            self.refuse(f"{name} changed while the command ran")


def read_regular(
    path: str, bound: bounded.Bound = bounded.LARGEST_INPUT
) -> tuple[bytes, os.stat_result]:
    """The content of the regular file at ``path`` and its stat when it was opened; OSError
    where it is missing, unreadable or not a regular file (a FIFO is never waited on),
    bounded.TooLarge past ``bound``."""
    kind = stat.S_IFMT(os.stat(path).st_mode)  # a device is not even opened
    if kind == stat.S_IFREG:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            opened = os.fstat(fd)
            if stat.S_ISREG(opened.st_mode):
                return _read_fd(fd, opened, bound, path), opened
            kind = stat.S_IFMT(opened.st_mode)
        finally:
            os.close(fd)
    if kind == stat.S_IFDIR:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    raise OSError(errno.EINVAL, "not a regular file", path)


def _read_fd(fd: int, opened: os.stat_result, bound: bounded.Bound, path: str) -> bytes:
    """The open regular file's bytes; bounded.TooLarge past ``bound``, read no further."""
    if opened.st_size > bound.limit:
        raise bounded.TooLarge(path, bound)
    chunks, total = [], 0
    while total <= bound.limit:
        chunk = os.read(fd, min(bounded.CHUNK, bound.limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > bound.limit:
        raise bounded.TooLarge(path, bound)
    return b"".join(chunks)


def file_state(path: str) -> list[int] | str | None:
    """What a file's answer depends on: its content's size and checksum; None where it is
    missing; why not where it cannot be read as a regular file."""
    try:
        data, _ = read_regular(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return _digest(data)


def _digest(data: bytes) -> list[int]:
    return [len(data), zlib.crc32(data)]


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _identity(st: os.stat_result | None) -> tuple[int, ...] | None:
    """What changes when a file is written or replaced."""
    if st is None:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _stat_state(st: os.stat_result | None) -> list[int] | None:
    if st is None:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _owner_state(st: os.stat_result | None) -> list[int] | None:
    return None if st is None else [st.st_uid, st.st_gid, st.st_mode]


def _enabled(env: dict[str, str]) -> bool:
    return env.get("STRATA_CACHE", "1") != "0"


def directory(env: dict[str, str]) -> str:
    """Where the cache folder is, whoever can write it (:func:`usable_directory` checks)."""
    if env.get("STRATA_CACHE_DIR"):
        return env["STRATA_CACHE_DIR"]
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "strata")


def usable_directory(env: dict[str, str], warn: Callable[[str], None] | None = None) -> str | None:
    """The cache folder, where no one but this user (or root) can write it; None where
    someone else can, said once as a warning (by ``warn``, where given): another user could
    plant answers in it, and answers become the engine's environment. A sticky folder that
    everyone can write (/tmp) is not usable either: others could add entries and folders to
    it. A missing folder is usable: it is made 0700 where it is first written."""
    folder = directory(env)
    try:
        st = os.stat(folder)
    except OSError:
        return folder
    why = _others_can_write(st)
    if why is None:
        return folder
    (warn or _warn)(
        f"the answer cache's folder {folder} is {why}: not used (another user could plant "
        "answers in it); the command goes on uncached"
    )
    return None


def _others_can_write(st: os.stat_result) -> str | None:
    from .trust import others_can_write

    return others_can_write(st)


def _warn(message: str) -> None:
    """Say ``message`` as a warning, once in this command."""
    if message in _warned:
        return
    _warned.add(message)
    from . import log

    log.warning(message)


def forget_warnings() -> None:
    """Start a new command: the warnings about the cache said before are said again."""
    _warned.clear()


def read_entry(env: dict[str, str], name: str, warn: Callable[[str], None] | None = None) -> Any:
    """The marshalled entry ``name`` of the cache folder, or None where there is none, it is
    not whole, or it (or the folder) is one that someone else can write (said once, by
    ``warn`` where given)."""
    folder = usable_directory(env, warn)
    if folder is None:
        return None
    path = os.path.join(folder, name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # a folder, a FIFO: no entry (open() refuses a folder)
        os.close(fd)
        return None
    with open(fd, "rb") as handle:
        why = _others_can_write(st)
        if why is not None:
            (warn or _warn)(
                f"the answer cache's entry {path} is {why}: not used; the command goes on uncached"
            )
            return None
        try:
            return marshal.loads(bounded.read_handle(handle, bounded.CACHE_ENTRY, path))
        except (OSError, ValueError, EOFError, TypeError):
            return None


def write_entry(env: dict[str, str], name: str, entry: dict[str, Any]) -> None:
    """Write ``entry`` as the marshal file ``name`` of the cache folder, private to this user
    (strata_core.files.put), and keep the folder within MAX_BYTES; not at all where the
    folder is not usable, and a failure to write is not an error."""
    folder = usable_directory(env)
    if folder is None:
        return
    from .files import put

    try:
        put(os.path.join(folder, name), marshal.dumps(entry), make_folders=True, private=True)
        _evict(folder)
    except (OSError, ValueError):
        pass


def _key(argv: list[str], env: dict[str, str]) -> str:
    """What an answer is stored under: the command line, the variables that change it, and
    the widths its lines for people were wrapped to."""
    from .people import widths

    relevant = sorted((k, v) for k, v in env.items() if k.startswith(ENV_PREFIXES))
    return repr(
        [FORMAT, sys.version, sys.executable, sys.path, os.getcwd(), argv, relevant, widths()]
    )


def _entry_name(key: str) -> str:
    return f"answer-{zlib.crc32(key.encode()):08x}.marshal"


def listing(path: str) -> list[str] | None:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return None


def stat_of(path: str) -> list[int] | None:
    """What a large file's or a module's answer depends on: its device, inode (a file
    replaced by another has a new one), size, mtime and ctime; None where it is missing."""
    return _stat_state(_stat(path))


def owner_of(path: str) -> list[int] | None:
    """Who may write a file or folder: its owner, group and mode; None where it is missing."""
    return _owner_state(_stat(path))


def _code_files() -> list[str]:
    stdlib = os.path.dirname(os.__file__)
    files = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
    return sorted(f for f in files if f and not f.startswith(stdlib))


def _unchanged(entry: dict[str, Any]) -> bool:
    """Whether every input of ``entry`` is still as it was read."""
    checks = (
        (file_state, entry["files"]),
        (listing, entry["dirs"]),
        (stat_of, entry["stats"]),
        (owner_of, entry["owners"]),
    )
    return all(
        probe(path) == value for probe, recorded in checks for path, value in recorded.items()
    )


def lookup(argv: list[str], env: dict[str, str]) -> dict[str, Any] | None:
    """The stored answer for this command line and environment, if still valid. Called
    before the command configures the log: a warning is said in the format it names."""

    def warn(message: str) -> None:
        from . import log

        log.configure(fmt=log.format_named(argv))
        _warn(message)

    if not _enabled(env):
        return None
    key = _key(argv, env)
    entry = read_entry(env, _entry_name(key), warn)
    if not isinstance(entry, dict) or entry.get("key") != key or not _unchanged(entry):
        return None
    try:
        os.utime(os.path.join(directory(env), _entry_name(key)))
    except OSError:
        pass
    return entry


def store(
    argv: list[str], env: dict[str, str], stdout: str, stderr: str, recorder: Recorder
) -> None:
    """Store an answer with what it depended on, as it was read; not where an input changed
    while the command ran (or cannot be checked), or the cache folder was not used. A
    failure to store is not an error."""
    if not _enabled(env) or recorder.refusals or _warned:
        return
    key = _key(argv, env)
    code = _code_files() + [p for p in sys.path if p and os.path.isdir(p)]
    entry = {
        "key": key,
        "stdout": stdout,
        "stderr": stderr,
        "files": recorder.files,
        "dirs": recorder.dirs,
        "stats": {p: stat_of(p) for p in code} | recorder.stats,
        "owners": recorder.owners,
    }
    if _unchanged(entry):  # else an input changed after the command read it
        write_entry(env, _entry_name(key), entry)


def _evict(folder: str) -> None:
    """Remove the least recently used entries until the folder holds at most MAX_BYTES."""
    entries = []
    for name in os.listdir(folder):
        if name.endswith(".marshal"):  # the answers, the plugin indexes, the measurements
            st = os.stat(os.path.join(folder, name))
            entries.append((st.st_mtime_ns, st.st_size, name))
    total = sum(size for _, size, _ in entries)
    for _, size, name in sorted(entries):
        if total <= MAX_BYTES:
            break
        os.unlink(os.path.join(folder, name))
        total -= size
