"""The ready-made engine packages: AMD_HIP.md "Ready-made packages", one row per table row."""

from __future__ import annotations

import attrs

from . import archdb
from .records import Device


@attrs.frozen
class Package:
    name: str
    os: str
    targets: tuple[str, ...]
    rocm: str


# fmt: off
PACKAGES = (
    Package("rx9070", "windows", ("gfx1200", "gfx1201"), "10.2.0a20260930 (TheRock)"),
    Package("rdna3", "windows", ("gfx1100", "gfx1101", "gfx1102", "gfx1151"), "10.2.0a20260930"),
    Package("rdna2", "windows", ("gfx1030", "gfx1031"), "10.2.0a20260930"),
    Package("rx9070", "linux", ("gfx1200", "gfx1201"), "7.10.0a20251120 (gfx120X-all wheels)"),
    Package("rx7900", "linux", ("gfx1100", "gfx1101", "gfx1102"),
            "7.10.0a20251120 (gfx110X-dgpu wheels)"),
    Package("halo", "linux", ("gfx1151",), "7.14.1 (TheRock)"),
    Package("rx6000", "linux", ("gfx1030", "gfx1031"), "7.13.0a20260515 (gfx103X-all wheels)"),
)
# fmt: on


def package_for(gfx: str, os_name: str) -> Package | None:
    return next((p for p in PACKAGES if p.os == os_name and gfx in p.targets), None)


def refusal(device: Device, os_name: str) -> str:
    """The one line for a card no package's GPU code covers."""
    arch = archdb.lookup(device.gfx)
    how = f" ({arch.status.value}: {arch.note})" if arch and arch.note else ""
    return (
        f"no ready-made {os_name.capitalize()} engine package carries GPU code for the "
        f"{device.family} card {device.name} ({device.gfx}); build the engine from source{how}"
    )
