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

import marshal
import os
import sys
import zlib

FORMAT = 1
#: Environment variables that can change an answer: strata's own, the ROCm runtime's, and
#: where the HIP runtime is looked for.
ENV_PREFIXES = (
    "STRATA_",
    "HSA_",
    "ROCR_",
    "HIP_",
    "CUDA_VISIBLE_DEVICES",
    "ROCM_PATH",
    "LD_LIBRARY_PATH",
)

_read_files: set[str] = set()
_stated_files: set[str] = set()
_listed_dirs: set[str] = set()
_refusals: list[str] = []


def read(path: object) -> None:
    """Record that the answer depends on this (small) file's content, or its absence."""
    _read_files.add(os.fspath(path))


def stated(path: object) -> None:
    """Record that the answer depends on this (large) file's size and mtime."""
    _stated_files.add(os.fspath(path))


def listed(path: object) -> None:
    """Record that the answer depends on which entries this directory holds."""
    _listed_dirs.add(os.fspath(path))


def refuse(reason: str) -> None:
    """This answer must not be cached (it depends on something that cannot be checked)."""
    _refusals.append(reason)


def _enabled(env: dict[str, str]) -> bool:
    return env.get("STRATA_CACHE", "1") != "0"


def _directory(env: dict[str, str]) -> str:
    if env.get("STRATA_CACHE_DIR"):
        return env["STRATA_CACHE_DIR"]
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "strata")


def _key(argv: list[str], env: dict[str, str]) -> str:
    relevant = sorted((k, v) for k, v in env.items() if k.startswith(ENV_PREFIXES))
    return repr([FORMAT, sys.version, sys.executable, sys.path, os.getcwd(), argv, relevant])


def _entry_path(key: str, env: dict[str, str]) -> str:
    return os.path.join(_directory(env), f"answer-{zlib.crc32(key.encode()):08x}.marshal")


def _content(path: str) -> list[int] | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return [len(data), zlib.crc32(data)]


def _listing(path: str) -> list[str] | None:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return None


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _code_files() -> list[str]:
    stdlib = os.path.dirname(os.__file__)
    files = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
    return sorted(f for f in files if f and not f.startswith(stdlib))


def lookup(argv: list[str], env: dict[str, str]) -> dict | None:
    """The stored answer for this command line and environment, if still valid."""
    if not _enabled(env):
        return None
    key = _key(argv, env)
    try:
        with open(_entry_path(key, env), "rb") as handle:
            entry = marshal.load(handle)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    checks = ((_content, entry["files"]), (_listing, entry["dirs"]), (_stat, entry["stats"]))
    for probe, recorded in checks:
        for path, value in recorded.items():
            if probe(path) != value:
                return None
    return entry


def store(argv: list[str], env: dict[str, str], stdout: str, stderr: str) -> None:
    """Store an answer with what it depended on; a failure to store is not an error."""
    if not _enabled(env) or _refusals:
        return
    key = _key(argv, env)
    stats = _code_files() + [p for p in sys.path if p and os.path.isdir(p)] + sorted(_stated_files)
    entry = {
        "key": key,
        "stdout": stdout,
        "stderr": stderr,
        "files": {p: _content(p) for p in sorted(_read_files)},
        "dirs": {p: _listing(p) for p in sorted(_listed_dirs)},
        "stats": {p: _stat(p) for p in stats},
    }
    path = _entry_path(key, env)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temp = f"{path}.{os.getpid()}.tmp"
        with open(temp, "wb") as handle:
            marshal.dump(entry, handle)
        os.replace(temp, path)
    except OSError:
        return
