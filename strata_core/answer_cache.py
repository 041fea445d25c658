"""A cache of the answers of read-only commands (`plan`, `devices`), so that asking again
costs about one Python start.

An answer is stored with everything it depended on: the files it read (checked by content:
sysfs attributes have no useful mtime), the directories it listed, and the Python modules
and ``sys.path`` folders that produced it (checked by mtime and size). It is given again only
while every one of them is unchanged. Only modules that cost nothing to import are used here
(entries are marshal files, not JSON), so that a hit stays fast.

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
    from typing import Any

FORMAT = 1
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


class Recorder:
    """Reads what an answer depends on, and remembers each read: small files by content (a
    missing one as missing), large files by size and mtime, folders by their entries. The
    pipeline reads every input through one recorder, so that a stored answer is checked
    against all of them by construction."""

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.stats: set[str] = set()
        self.dirs: set[str] = set()
        self.refusals: list[str] = []

    def read_text(
        self, path: str | os.PathLike[str], bound: bounded.Bound = bounded.DOCUMENT
    ) -> str:
        """The file's UTF-8 text (OSError, UnicodeDecodeError as ``open`` raises them; a file
        past ``bound`` is bounded.TooLarge, read no further). Only a regular file is opened:
        a FIFO, a device or a folder is an OSError, never read."""
        kind = stat.S_IFMT(os.stat(path).st_mode)
        if kind == stat.S_IFDIR:
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        if kind != stat.S_IFREG:
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        self.files.add(os.fspath(path))
        return bounded.read_text(path, bound)

    def is_file(self, path: str | os.PathLike[str]) -> bool:
        self.files.add(os.fspath(path))
        return os.path.isfile(path)

    def list_dir(self, path: str | os.PathLike[str]) -> list[str]:
        """The folder's entries, sorted; empty where it is missing or no folder."""
        self.dirs.add(os.fspath(path))
        return listing(os.fspath(path)) or []

    def is_dir(self, path: str | os.PathLike[str]) -> bool:
        self.dirs.add(os.fspath(path))
        return os.path.isdir(path)

    def stat(self, path: str | os.PathLike[str]) -> os.stat_result | None:
        """The file's stat, or None where it is missing; its size and mtime are recorded."""
        self.stats.add(os.fspath(path))
        try:
            return os.stat(path)
        except OSError:
            return None

    def refuse(self, reason: str) -> None:
        """This answer must not be cached (it depends on something that cannot be checked)."""
        self.refusals.append(reason)


def _enabled(env: dict[str, str]) -> bool:
    return env.get("STRATA_CACHE", "1") != "0"


def directory(env: dict[str, str]) -> str:
    if env.get("STRATA_CACHE_DIR"):
        return env["STRATA_CACHE_DIR"]
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "strata")


def _key(argv: list[str], env: dict[str, str]) -> str:
    """What an answer is stored under: the command line, the variables that change it, and
    the widths its lines for people were wrapped to."""
    from .people import widths

    relevant = sorted((k, v) for k, v in env.items() if k.startswith(ENV_PREFIXES))
    return repr(
        [FORMAT, sys.version, sys.executable, sys.path, os.getcwd(), argv, relevant, widths()]
    )


def _entry_path(key: str, env: dict[str, str]) -> str:
    return os.path.join(directory(env), f"answer-{zlib.crc32(key.encode()):08x}.marshal")


def _content(path: str) -> list[int] | None:
    """What a file read by a Recorder holds: its length and CRC; a file past the largest
    bound an input is read with, only that (it was refused unread); None where unreadable."""
    try:
        data = bounded.read_bytes(path, bounded.LARGEST_INPUT)
    except bounded.TooLarge:
        return [-1, -1]
    except OSError:
        return None
    return [len(data), zlib.crc32(data)]


def listing(path: str) -> list[str] | None:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return None


def stat_of(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _code_files() -> list[str]:
    stdlib = os.path.dirname(os.__file__)
    files = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
    return sorted(f for f in files if f and not f.startswith(stdlib))


def lookup(argv: list[str], env: dict[str, str]) -> dict[str, Any] | None:
    """The stored answer for this command line and environment, if still valid."""
    if not _enabled(env):
        return None
    key = _key(argv, env)
    entry = read_entry(_entry_path(key, env))
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    checks = ((_content, entry["files"]), (listing, entry["dirs"]), (stat_of, entry["stats"]))
    for probe, recorded in checks:
        for path, value in recorded.items():
            if probe(path) != value:
                return None
    try:
        os.utime(_entry_path(key, env))
    except OSError:
        pass
    return entry


def store(
    argv: list[str], env: dict[str, str], stdout: str, stderr: str, recorder: Recorder
) -> None:
    """Store an answer with what it depended on; a failure to store is not an error."""
    if not _enabled(env) or recorder.refusals:
        return
    key = _key(argv, env)
    stats = _code_files() + [p for p in sys.path if p and os.path.isdir(p)] + sorted(recorder.stats)
    entry = {
        "key": key,
        "stdout": stdout,
        "stderr": stderr,
        "files": {p: _content(p) for p in sorted(recorder.files)},
        "dirs": {p: listing(p) for p in sorted(recorder.dirs)},
        "stats": {p: stat_of(p) for p in stats},
    }
    write_entry(_entry_path(key, env), entry)


def read_entry(path: str) -> Any:
    """What the marshal file at ``path`` holds; None where it is missing, unreadable, past
    bounded.CACHE_ENTRY or not a marshal file."""
    try:
        return marshal.loads(bounded.read_bytes(path, bounded.CACHE_ENTRY))
    except (OSError, ValueError, EOFError, TypeError):
        return None


def write_entry(path: str, entry: dict[str, Any]) -> None:
    """Write ``entry`` as a marshal file, whole or not at all, and keep the folder within
    MAX_BYTES; a failure to write is not an error."""
    temp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temp, "wb") as handle:
            marshal.dump(entry, handle)
        os.replace(temp, path)
        _evict(os.path.dirname(path))
    except OSError:
        try:
            os.unlink(temp)
        except OSError:
            pass


def _evict(folder: str) -> None:
    """Remove the least recently used entries until the folder holds at most MAX_BYTES."""
    entries = []
    for name in os.listdir(folder):
        if name.endswith(".marshal"):  # the answers, and the plugin indexes
            st = os.stat(os.path.join(folder, name))
            entries.append((st.st_mtime_ns, st.st_size, name))
    total = sum(size for _, size, _ in entries)
    for _, size, name in sorted(entries):
        if total <= MAX_BYTES:
            break
        os.unlink(os.path.join(folder, name))
        total -= size
