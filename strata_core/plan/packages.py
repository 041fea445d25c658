"""The ready-made engine packages: AMD_HIP.md "Ready-made packages", one row per table row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from .. import archdb
from ..api.records import Device


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


#: Targets that setup builds from source only when a variable opts in (AMD_HIP.md, "Tuning
#: table": "Setup installs for gfx1103 only with STRATA_EXPERIMENTAL_GFX1103=1"; "Supported
#: cards": "Linux, opt-in build"). The variable is setup's, not an engine switch.
OPT_IN_BUILDS = {"gfx1103": "STRATA_EXPERIMENTAL_GFX1103"}


#: Targets an OS does not run (AMD_HIP.md, "Windows": "Phoenix / Hawk Point (780M / 760M) is
#: not supported on Windows; on Linux it has an opt-in build").
NOT_SUPPORTED_ON = {("gfx1103", "windows")}


def opt_in_variable(gfx: str, os_name: str) -> str | None:
    """The variable that makes setup build the engine for ``gfx`` on this OS, if one does."""
    return OPT_IN_BUILDS.get(gfx) if os_name == "linux" else None


def opted_in(gfx: str, os_name: str, env: Mapping[str, str]) -> bool:
    variable = opt_in_variable(gfx, os_name)
    return variable is not None and env.get(variable) == "1"


def status(gfx: str, os_name: str, env: Mapping[str, str], described_by: str = "") -> str:
    """The "Supported cards" status of a target, with the opt-in where the user gave it; an
    NVIDIA card's compute capability (the page's cards are AMD's); for a target the page does
    not name, the plugin that describes it (``described_by``), if one does."""
    if gfx.startswith(archdb.NVIDIA_PREFIX):
        capability = archdb.compute_capability(gfx)
        if capability is None:
            return "NVIDIA, compute capability unknown (the NVIDIA driver did not describe it)"
        return f"NVIDIA, compute capability {capability // 10}.{capability % 10}"
    page = archdb.page_target(gfx)
    if page is None:
        if described_by:
            return f"not on the page; described by {described_by}"
        return "neither on the page nor described by an installed plugin"
    if (gfx, os_name) in NOT_SUPPORTED_ON:
        return f"not supported on {os_name.capitalize()}"
    if opted_in(gfx, os_name, env):
        return f"{page.status.value}, opted in ({OPT_IN_BUILDS[gfx]}=1)"
    own_page = page.status is archdb.SupportStatus.OWN_PAGE
    return f"{page.status.value}, {page.note}" if own_page else page.status.value


def package_for(gfx: str, os_name: str) -> Package | None:
    return next((p for p in PACKAGES if p.os == os_name and gfx in p.targets), None)


def split_refusal(package: Package, cards: Sequence[Device], os_name: str) -> str | None:
    """The one line for a package that lacks GPU code for one of a split's cards, or None
    where it covers them all."""
    missing = next((d for d in cards if d.gfx not in package.targets), None)
    if missing is None:
        return None
    return (
        f"no ready-made {os_name.capitalize()} engine package carries GPU code for every "
        f"chosen card: {package.name} has none for the {missing.family} card {missing.name} "
        f"({missing.gfx}); build the engine from source"
    )


def refusal(device: Device, os_name: str) -> str:
    """The one line for a card no package's GPU code covers."""
    page = archdb.page_target(device.gfx)
    how = f" ({page.status.value}: {page.note})" if page and page.note else ""
    variable = opt_in_variable(device.gfx, os_name)
    if variable:
        how += f"; setup installs for {device.gfx} only with {variable}=1"
    return (
        f"no ready-made {os_name.capitalize()} engine package carries GPU code for the "
        f"{device.family} card {device.name} ({device.gfx}); build the engine from source{how}"
    )


def source_build(device: Device, os_name: str) -> str:
    """The start line for a card whose opt-in build the user asked for."""
    page = archdb.page_target(device.gfx)
    note = f": {page.note}" if page and page.note else ""
    return (
        f"{OPT_IN_BUILDS[device.gfx]}=1: setup builds the engine for {device.name} "
        f"({device.gfx}) from source (opt-in build{note})"
    )
