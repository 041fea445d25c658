"""Plugins under test: a card as the plugins describe it and the plan a plugin makes for it,
with the manager of strata_core.api.manager.PluginManager.holding."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..api.arch import Architectures
from ..api.manager import PluginManager
from ..api.records import Device, RunContext
from ..errors import StrataError
from ..plan import devices
from ..plan.claims import assign
from ..plan.plan import Plan, resolve_card


def manager_for(
    plugins: Mapping[str, object], env: Mapping[str, str] | None = None
) -> PluginManager:
    """A manager holding the core's ``core`` and ``host`` plugins and exactly ``plugins``."""
    return PluginManager.holding(plugins, env)


def _manager(plugins: Mapping[str, object] | None, env: Mapping[str, str]) -> PluginManager:
    return PluginManager.discover(env) if plugins is None else manager_for(plugins, env)


def device_for(gfx: str, plugins: Mapping[str, object] | None = None, **facts: Any) -> Device:
    """A card of ``gfx`` as the plugins among ``plugins`` (default: every installed plugin)
    describe its target; ``facts`` are strata_core.plan.devices.device_for's (``wave_size``,
    ``integrated``, ...)."""
    archs = Architectures(_manager(plugins, {}).arch_records())
    return devices.device_for(gfx, archs=archs, **facts)


def plan_for(
    device: Device | str,
    context: RunContext | None = None,
    plugins: Mapping[str, object] | None = None,
    env: Mapping[str, str] | None = None,
) -> Plan:
    """The plan for ``device`` (a Device or a gfx target, described by ``plugins``) in
    ``context``, made by the plugin among ``plugins`` (default: every installed plugin) that
    wins the device, with ``env`` as the user's environment. A device nobody claims raises
    StrataError with every reason."""
    env = dict(env or {})
    manager = _manager(plugins, env)
    if isinstance(device, str):
        archs = Architectures(manager.arch_records())
        device = devices.device_for(device, archs=archs, seen_by=("strata_core.testing",))
    (assignment,), problems = assign(manager, [device], env.get("STRATA_ARCH_PLUGIN"))
    if assignment.plugin is None:
        raise StrataError("; ".join([f"{device.gfx}: {assignment.reason}", *problems]))
    return resolve_card(
        manager, device, assignment.plugin, context or RunContext(), env, {}, (), "no run config"
    ).as_plan()
