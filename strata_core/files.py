"""Atomic file writes, of text (as UTF-8) or bytes: a reader sees the old file or the new one,
never half of either. A file that is replaced keeps its mode; a new one gets the mode the umask
gives. A write that fails leaves the old file as it was and no temporary file behind, and is
one StrataError naming the file and the reason."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from .errors import StrataError


def write_atomic(path: Path, data: str | bytes, make_folders: bool = False) -> None:
    """Write ``data`` to ``path``; its folder must exist unless ``make_folders`` (a folder the
    user asked for, or strata's own data folder) lets it be made."""
    path = Path(path).resolve()
    try:
        _replace(path, data.encode() if isinstance(data, str) else data, make_folders)
    except OSError as exc:
        raise StrataError(
            f"{path}: cannot write ({exc.strerror or exc}); nothing was changed"
        ) from None


def _replace(path: Path, data: bytes, make_folders: bool) -> None:
    if path.is_dir():
        raise IsADirectoryError(21, "it is a folder")
    blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise NotADirectoryError(20, f"{blocking} is a file, not a folder")
    if not make_folders and not path.parent.is_dir():
        raise FileNotFoundError(2, f"no folder {path.parent}")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    # a short name: the file's own may already be as long as a name can be
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".strata-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
