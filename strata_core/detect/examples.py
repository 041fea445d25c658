"""The example machines strata ships, named as ``--sysfs example:NAME`` (or STRATA_SYSFS): the
sysfs trees of sample PCs (strata_core.detect.sample_sysfs), so that a plan for a card is made
without the card. A tree is written once into the answer cache's folder, under a name that
changes with its contents, and read from there as any sysfs root is: built in a new private
folder, synced and renamed into place whole (strata_core.files.publish_folder). Where the
cache folder is one that someone else can write (strata_core.answer_cache.usable_directory),
the tree is written into a private temporary folder instead, removed when the command ends."""

from __future__ import annotations

import atexit
import difflib
import shutil
import tempfile
import zlib
from collections.abc import Mapping
from pathlib import Path

import attrs

from .. import __version__
from ..answer_cache import usable_directory
from ..errors import StrataError
from ..files import publish_folder
from .sample_sysfs import (
    MI50,
    R9700,
    RADEON_780M,
    RX_7900_XTX,
    FakeGPU,
    fake_gpu,
    write_nvidia_gpu,
    write_sysfs,
)

PREFIX = "example:"
#: an H200's PCI device id (NVIDIA's class 0x0302 display function)
H200_DEVICE = 0x2335


@attrs.frozen
class ExampleMachine:
    """A sample PC: what it is, its AMD cards (in KFD's order) and the PCI addresses of its
    NVIDIA cards (an H200 each)."""

    about: str
    amd: tuple[FakeGPU, ...]
    nvidia: tuple[str, ...] = ()


EXAMPLES = {
    "r9700-780m": ExampleMachine(
        "a Radeon AI PRO R9700 beside a Ryzen's Radeon 780M", (R9700, RADEON_780M)
    ),
    "rdna3-pair": ExampleMachine(
        "an RX 7900 XTX and an RX 7800 XT",
        (
            RX_7900_XTX,
            fake_gpu("gfx1101", vram_gib=16, pci_bus=0x87, device_id=0x747E, revision=0xC8),
        ),
    ),
    "780m": ExampleMachine("a mini PC's Radeon 780M alone", (RADEON_780M,)),
    "gfx906-pair": ExampleMachine(
        "two Instinct MI50", (MI50, attrs.evolve(MI50, pci=(0x44, 0, 0), unique_id=0x4A1B2C3D4E5F6072))
    ),
    "h200-r9700": ExampleMachine(
        "an NVIDIA H200 beside a Radeon AI PRO R9700", (R9700,), ("0000:41:00.0",)
    ),
}


def listing() -> str:
    """The example names, for --help."""
    return ", ".join(EXAMPLES)


def example_name(text: str) -> str:
    """The example that ``example:NAME`` names; StrataError naming the examples (and the
    closest one) where it names none."""
    name = text.removeprefix(PREFIX)
    if name in EXAMPLES:
        return name
    close = difflib.get_close_matches(name, list(EXAMPLES), n=1)
    hint = f"; did you mean {PREFIX}{close[0]}?" if close else ""
    raise StrataError(f"{text!r} is not an example machine ({listing()}){hint}")


def sysfs_root(text: str, env: Mapping[str, str]) -> Path:
    """The sysfs root that ``text`` names: a folder, or ``example:NAME``'s tree (written
    first where it is not there yet)."""
    if not text.startswith(PREFIX):
        return Path(text)
    name = example_name(text)
    machine = EXAMPLES[name]
    digest = zlib.crc32(repr((__version__, machine)).encode())
    cache = usable_directory(dict(env))
    if cache is None:
        return _temporary_tree(text, machine)
    folder = Path(cache) / "examples"
    root = folder / f"{name}-{digest:08x}"
    if root.is_dir():
        return root
    try:
        for private in (Path(cache), folder):
            private.mkdir(mode=0o700, parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder))
        _write_tree(building, machine)
        try:
            publish_folder(building, root)
        except OSError:
            shutil.rmtree(building, ignore_errors=True)
            if not root.is_dir():  # not one that another command wrote meanwhile
                raise
    except OSError as exc:
        raise StrataError(
            f"--sysfs {text}: cannot write the example's tree into {folder} "
            f"({exc.strerror or exc})"
        ) from None
    return root


def _write_tree(root: Path, machine: ExampleMachine) -> None:
    write_sysfs(root, machine.amd)
    for pci in machine.nvidia:
        write_nvidia_gpu(root, pci, H200_DEVICE)


def _temporary_tree(text: str, machine: ExampleMachine) -> Path:
    """The example's tree in a new private temporary folder, removed when the command ends."""
    try:
        root = Path(tempfile.mkdtemp(prefix="strata-example-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        _write_tree(root, machine)
    except OSError as exc:
        raise StrataError(
            f"--sysfs {text}: cannot write the example's tree ({exc.strerror or exc})"
        ) from None
    return root
