"""Files read whole, each within a bound: a file past its bound (a 20 GB sparse file where a
sysfs attribute belongs, a child that prints without end) is refused with TooLarge, an
OSError that says the bound, after at most the bound and one byte were read. Every bound
strata reads a file whole with is here, with its reason.

Only the standard library's cheapest modules are imported: the answer cache reads through
this module before a command starts."""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on the cache's path
if TYPE_CHECKING:
    from typing import IO

MIB = 1 << 20
#: the most one read asks for: a large bound is not allocated at once
CHUNK = MIB


class Bound:
    """The most strata reads of one kind of file, and the kind in words."""

    __slots__ = ("limit", "what")

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.what = what

    def __repr__(self) -> str:
        return f"Bound({self.limit}, {self.what!r})"

    def exceeded(self) -> str:
        """What a file past this bound is: ``over 4096 bytes, the most strata reads of a sysfs
        attribute``."""
        return f"over {size_text(self.limit)}, the most strata reads of {self.what}"


#: the kernel's show() of a sysfs attribute fills at most one page (KFD's properties: ~1 KB)
SYSFS_ATTRIBUTE = Bound(os.sysconf("SC_PAGE_SIZE"), "a sysfs attribute")
#: a run config or a profile: a few switches, the engine's arguments and environment, shapes
DOCUMENT = Bound(MIB, "a run config or a profile")
#: a tuning table is a line a GEMM shape (about 60 bytes): 16 MiB is past 250,000 shapes
TUNING_TABLE = Bound(16 * MIB, "a tuning table")
#: an answer of the cache, the plugin index, a kept measurement: the folder holds 8 MiB
CACHE_ENTRY = Bound(8 * MIB, "an entry of the answer cache")
#: a probe child's or a GPU child's JSON answer: NVML's answer about 100,000 cards is 20 MiB
CHILD_ANSWER = Bound(64 * MIB, "a child's answer")
#: a plugin's kernels/build.json names a code object a target
BUILD_MANIFEST = Bound(MIB, "a kernel build manifest")
#: a plugin's code object or PTX module (about 400 KB each)
KERNEL_CODE = Bound(256 * MIB, "a kernel code object")
#: the architecture database strata ships (strata_core/archdb.toml, a few KB)
ARCH_DATABASE = Bound(MIB, "the architecture database")
#: libdrm's amdgpu.ids, the marketing names of AMD GPUs (30-60 KB as libdrm ships it)
AMDGPU_IDS = Bound(MIB, "libdrm's table of AMD GPU names")
#: /proc/cpuinfo, /proc/meminfo, /etc/os-release, ROCm's version file (cpuinfo of 512 cores
#: is about 1 MiB)
SYSTEM_FILE = Bound(4 * MIB, "a system file")
#: the largest bound of the files an answer of the cache depends on (its content check)
LARGEST_INPUT = Bound(
    max(b.limit for b in (SYSFS_ATTRIBUTE, DOCUMENT, TUNING_TABLE)), "an input of an answer"
)


class TooLarge(OSError):
    """A file past its bound: ``strerror`` says the bound (``over 4096 bytes, the most strata
    reads of a sysfs attribute``), so that a caller's ``cannot read (...)`` line names it."""

    def __init__(self, name: str, bound: Bound) -> None:
        super().__init__(errno.EFBIG, bound.exceeded(), name)


def size_text(count: int) -> str:
    """``4096 bytes``, ``16 MiB``."""
    return f"{count // MIB} MiB" if count >= MIB and count % MIB == 0 else f"{count} bytes"


def read_bytes(path: str | os.PathLike[str], bound: Bound) -> bytes:
    """The file's bytes; TooLarge past ``bound``, OSError as ``open`` raises it."""
    with open(path, "rb", buffering=0) as handle:
        return read_handle(handle, bound, os.fspath(path))


def read_text(path: str | os.PathLike[str], bound: Bound) -> str:
    """The file's UTF-8 text; TooLarge past ``bound``, UnicodeDecodeError for other bytes."""
    return read_bytes(path, bound).decode("utf-8")


def check_size(handle: IO[bytes], bound: Bound, name: str) -> None:
    """TooLarge where the open file's size is past ``bound`` (a pipe's is 0, a sysfs
    attribute's a page whatever it holds: their bytes are counted as they are read)."""
    if os.fstat(handle.fileno()).st_size > bound.limit:
        raise TooLarge(name, bound)


def read_handle(handle: IO[bytes], bound: Bound, name: str) -> bytes:
    """What an open file (a pipe too) holds, read to its end; TooLarge, without reading
    further, once it holds more than ``bound`` (at once where its size already says so)."""
    check_size(handle, bound, name)
    chunks, total = [], 0
    while total <= bound.limit:
        chunk = handle.read(min(CHUNK, bound.limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > bound.limit:
        raise TooLarge(name, bound)
    return b"".join(chunks)
