"""Which plugin runs each device: the most specific claim wins; a tie needs the user."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from .. import archdb
from ..api.manager import PluginManager, PluginStatus
from ..api.records import Claim, Device
from .devices import UNREPORTED


@attrs.frozen
class Assignment:
    device: Device
    plugin: str | None
    reason: str
    claims: tuple[tuple[str, Claim], ...] = ()

    @property
    def usable(self) -> bool:
        return self.plugin is not None and self.device.visible

    @property
    def refusals(self) -> list[str]:
        """Why each plugin that does not run the device refuses it (the long form of a
        ``reason`` that no plugin runs it)."""
        return [f"{name} {claim.reason}" for name, claim in self.claims if claim.score <= 0]


def assign(
    manager: PluginManager, devices: Sequence[Device], chosen: str | None = None
) -> tuple[list[Assignment], list[str]]:
    """Resolve each device's plugin. ``chosen`` is STRATA_ARCH_PLUGIN (or the run config's
    choice): when it claims a device it wins there, whatever the others score."""
    problems: list[str] = []
    if chosen and chosen not in manager.active():
        problems.append(
            f"STRATA_ARCH_PLUGIN={chosen} names no active plugin "
            f"(active: {', '.join(manager.active())})"
        )
    result = []
    # a claim is decided on the target and wave alone (the hook's contract): asked once each
    asked: dict[tuple[str, int | None], tuple[tuple[str, Claim], ...]] = {}
    for device in devices:
        key = (device.gfx, device.wave_size)
        if key not in asked:
            asked[key] = tuple(manager.claims(device))
        result.append(_resolve(manager, device, asked[key], chosen, problems))
    return result, problems


def _resolve(
    manager: PluginManager,
    device: Device,
    claims: tuple[tuple[str, Claim], ...],
    chosen: str | None,
    problems: list[str],
) -> Assignment:
    positive = [(name, c) for name, c in claims if c.score > 0]
    for name, claim in positive:
        if name == chosen:
            return Assignment(device, name, f"{name} {claim.reason} (STRATA_ARCH_PLUGIN)", claims)
    if not positive:
        return Assignment(device, None, _nobody(manager, device), claims)
    best = max(c.score for _, c in positive)
    top = [name for name, c in positive if c.score == best]
    if len(top) > 1:
        why = (
            f"plugins {' and '.join(top)} both claim {device.gfx} with specificity {best}; "
            f"set STRATA_ARCH_PLUGIN to one of them"
        )
        problems.append(f"device {device.pci or device.gfx}: {why}")
        return Assignment(device, None, why, claims)
    winner, claim = next((n, c) for n, c in positive if n == top[0])
    return Assignment(device, winner, f"{winner} {claim.reason}", claims)


#: how a plugin distribution is installed from a checkout's wheelhouse (README.md,
#: "Installing like a user"; scripts/build-wheels.sh writes dist/)
INSTALL = "scripts/build-wheels.sh && pip install --no-index --find-links dist {}"


def _nobody(manager: PluginManager, device: Device) -> str:
    """The short reason: the plugin to install or the one that is not active, and for a
    target the wave32 builds cannot run, the page's why (each plugin's own refusal is in
    Assignment.refusals)."""
    if device.gfx == UNREPORTED:
        return (
            "this kernel's KFD does not report the architecture, so no plugin can claim it; "
            "a newer kernel (or HSA_OVERRIDE_GFX_VERSION) names it"
        )
    why = f"no installed plugin runs {device.gfx} ({device.family})"
    reasons = []
    found = archdb.extra_for(device.gfx)
    if found is not None:
        _, distribution = found
        records = [r for r in manager.records.values() if r.distribution == distribution]
        reasons += [
            f"{r.name} is {r.status.value}: {r.why}"
            for r in records
            if r.status is not PluginStatus.ACTIVE
        ]
        if not records:
            reasons.append(
                f"{distribution} is not installed (from a checkout: {INSTALL.format(distribution)})"
            )
    page = archdb.page_target(device.gfx)
    if page is not None and page.wave32_refusal:
        reasons.append(f"{page.wave32_refusal} (AMD_HIP.md, {page.target})")
    return why + (": " + "; ".join(reasons) if reasons else "")


def builds_carry(manager: PluginManager, device: Device) -> str | None:
    """What the installed builds of the device's vendor carry code for, where none carries
    the device's target (AMD_HIP.md: "A binary carried to another card stops with the card's
    name, its architecture and the build's list"); None where one does."""
    carried = sorted(
        {
            target
            for r in manager.records.values()
            if r.status is PluginStatus.ACTIVE and not r.builtin
            for target in r.targets
            if archdb.vendor_of(target) == device.vendor
        },
        key=lambda target: (len(target), target),  # gfx906 before gfx1030
    )
    if not carried:
        return f"no {archdb.VENDOR_NAMES.get(device.vendor, device.vendor)} GPU build is installed"
    if device.gfx in carried:
        return None
    return f"the installed builds carry {', '.join(carried)}, not {device.gfx}"
