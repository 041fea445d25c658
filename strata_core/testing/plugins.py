"""Plugins under test: the plan a plugin makes for a card, with the manager and devices of
strata_core.api.manager.PluginManager.holding and strata_core.plan.devices.device_for."""

from __future__ import annotations

from collections.abc import Mapping

from ..api.manager import PluginManager
from ..api.records import Device, RunContext
from ..errors import StrataError
from ..plan.claims import assign
from ..plan.devices import device_for
from ..plan.plan import Plan, build_plan


def manager_for(
    plugins: Mapping[str, object], env: Mapping[str, str] | None = None
) -> PluginManager:
    """A manager holding the core's ``core`` and ``host`` plugins and exactly ``plugins``."""
    return PluginManager.holding(plugins, env)


def plan_for(
    device: Device | str,
    context: RunContext | None = None,
    plugins: Mapping[str, object] | None = None,
    env: Mapping[str, str] | None = None,
) -> Plan:
    """The plan for ``device`` (a Device or a gfx target) in ``context``, made by the plugin
    among ``plugins`` (default: every installed plugin) that wins the device, with ``env`` as
    the user's environment. A device nobody claims raises StrataError with every reason."""
    if isinstance(device, str):
        device = device_for(device, seen_by=("strata_core.testing",))
    env = dict(env or {})
    manager = PluginManager.discover(env) if plugins is None else manager_for(plugins, env)
    (assignment,), problems = assign(manager, [device], env.get("STRATA_ARCH_PLUGIN"))
    if assignment.plugin is None:
        raise StrataError("; ".join([f"{device.gfx}: {assignment.reason}", *problems]))
    return build_plan(
        manager, device, assignment.plugin, context or RunContext(), env, {}, (), "no run config"
    )
