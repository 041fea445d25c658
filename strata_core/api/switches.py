"""Switches (engine environment variables and engine arguments), their defaults, and rule rows.

A plugin declares the switches it knows as :class:`Switch` rows and gives defaults for a
device as :class:`Rule` rows, so each row can be checked against the engine's HIP backend
page (AMD_HIP.md).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

import attrs

from ..digits import is_digits
from .records import Device, RunContext

#: Placeholders in ``Switch.values`` for free-form values of a type.
INTEGER, NUMBER, PATH = "<integer>", "<number>", "<path>"
_NUMBER = re.compile(r"^-?(\d+(\.\d*)?|\.\d+)$")


@attrs.frozen
class Switch:
    """One switch the engine reads. ``targets``/``os``/``backends`` empty means everywhere.

    ``targets`` are the ISA generations (``gfx12``, a record's ``generation``) and targets
    (``gfx1100``) where the page says the engine reads it; ``name`` is an environment variable
    (``STRATA_HIP_WMMA``) or an engine argument (``--pcie-frac``); ``builtin`` says what the
    engine does while it is unset; ``backends`` the GPU backends whose engine reads it
    (``hip``, ``cuda``).
    """

    name: str
    values: tuple[str, ...]
    meaning: str
    changes_bits: bool
    builtin: str
    targets: tuple[str, ...] = ()
    os: tuple[str, ...] = ()
    section: str = ""
    backends: tuple[str, ...] = ()

    @property
    def is_arg(self) -> bool:
        return self.name.startswith("--")

    @property
    def applies(self) -> str:
        where = ", ".join(self.targets) or "every card"
        return where + (f" ({', '.join(self.os)})" if self.os else "")

    def accepts(self, value: str) -> bool:
        value = value.strip()
        return any(
            value == allowed
            or (allowed == INTEGER and is_digits(value))
            or (allowed == NUMBER and _NUMBER.match(value) is not None)
            or (allowed == PATH and value != "")
            for allowed in self.values
        )

    def applies_to(self, device: Device, os_name: str) -> bool:
        generation = device.arch.generation if device.arch else None
        return (
            not self.targets or device.gfx in self.targets or generation in self.targets
        ) and (not self.os or os_name in self.os)


def matches(gfx: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(gfx, p) for p in patterns)


@attrs.frozen
class Default:
    """A value a plugin gives a switch for one device and context, and why.
    ``source`` is ``arch-default`` or ``igpu-set``."""

    name: str
    value: str
    reason: str
    source: str = "arch-default"


@attrs.frozen
class Defaults:
    """What ``strata_switch_defaults`` returns: values, start lines, warnings."""

    values: tuple[Default, ...] = ()
    log: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@attrs.frozen
class Rule:
    """One default row: ``switch`` gets ``value`` where every condition holds.

    Empty conditions hold everywhere. ``given`` holds when each named switch was set by
    the user or the run config to that value. The first matching row for a switch wins.
    """

    switch: str
    value: str
    reason: str
    targets: tuple[str, ...] = ()
    os: tuple[str, ...] = ()
    kv: tuple[str, ...] = ()
    packs: tuple[str, ...] = ()
    kv_streaming: bool | None = None
    given: Mapping[str, str] = attrs.field(factory=dict)

    def holds(self, device: Device, context: RunContext) -> bool:
        return (
            (not self.targets or matches(device.gfx, self.targets))
            and (not self.os or context.os in self.os)
            and (not self.kv or context.kv in self.kv)
            and (not self.packs or context.pack in self.packs)
            and (self.kv_streaming is None or context.kv_streaming == self.kv_streaming)
            and all(context.given.get(k) == v for k, v in self.given.items())
        )


def apply_rules(rules: Iterable[Rule], device: Device, context: RunContext) -> tuple[Default, ...]:
    """The first matching row for each switch, in table order."""
    chosen: dict[str, Default] = {}
    for rule in rules:
        if rule.switch not in chosen and rule.holds(device, context):
            chosen[rule.switch] = Default(rule.switch, rule.value, rule.reason)
    return tuple(chosen.values())


@attrs.frozen
class Resolved:
    """A switch's value in a plan (None: unset), where it came from (one of SOURCES of
    strata_core.plan.resolve) and why."""

    value: str | None
    source: str
    reason: str
