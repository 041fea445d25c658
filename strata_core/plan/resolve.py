"""Switch resolution: the user's value > the run config's > a plugin default > unset.

A value set by the user or the run config is kept verbatim, whatever it is; one the
switch does not accept, or one set where the switch does not apply, gets a warning.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..api.records import Device
from ..api.switches import Default, Resolved, Switch

SOURCES = ("user", "config", "arch-default", "igpu-set", "builtin")


def resolve(
    switches: Mapping[str, Switch],
    user: Mapping[str, str],
    config: Mapping[str, str],
    config_name: str,
    defaults: Mapping[str, Default],
    device: Device,
    os_name: str,
) -> tuple[dict[str, Resolved], list[str]]:
    resolved: dict[str, Resolved] = {}
    warnings: list[str] = []
    for name in sorted(switches):
        switch = switches[name]
        if name in user or name in config:
            source, value = ("user", user[name]) if name in user else ("config", config[name])
            where = (
                ("given on the engine command line" if switch.is_arg else "set in the environment")
                if source == "user"
                else f"set in {config_name}"
            )
            resolved[name] = Resolved(value, source, where)
            warnings += _check(switch, value, where, device, os_name)
        elif name in defaults:
            default = defaults[name]
            resolved[name] = Resolved(default.value, default.source, default.reason)
        else:
            resolved[name] = Resolved(None, "builtin", f"unset; engine built-in: {switch.builtin}")
    return resolved, warnings


def _check(switch: Switch, value: str, where: str, device: Device, os_name: str) -> list[str]:
    if not switch.accepts(value):
        return [
            f"{switch.name}={value} ({where}): expected one of {', '.join(switch.values)}; "
            "kept as given"
        ]
    if not switch.applies_to(device, os_name):
        return [
            f"{switch.name}={value} ({where}) applies to {switch.applies}; "
            f"{device.gfx} on {os_name} does not read it"
        ]
    return []


def parse_engine_args(args: list[str] | tuple[str, ...], flags: set[str]) -> dict[str, str]:
    """The values of the declared flags in an engine argument list (``--f v`` or ``--f=v``)."""
    found: dict[str, str] = {}
    for i, arg in enumerate(args):
        flag, eq, value = arg.partition("=")
        if flag in flags:
            found[flag] = value if eq else (args[i + 1] if i + 1 < len(args) else "")
    return found


def without_flags(args: tuple[str, ...], flags: set[str]) -> tuple[str, ...]:
    """``args`` without the named flags and their values (``--f v`` or ``--f=v``)."""
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        flag, eq, _ = arg.partition("=")
        if flag in flags:
            skip = not eq
            continue
        kept.append(arg)
    return tuple(kept)
