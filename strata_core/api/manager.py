"""Plugin discovery and isolated hook calls, on top of pluggy.

Entry points of the group ``strata.arch`` (read through strata_core.api.plugin_index) are the
plugins; the built-in detectors (``kfd``, ``hip``) are registered the same way. Environment
controls:

- ``STRATA_PLUGINS=a,b``: load only these entry-point plugins (an allow-list);
- ``STRATA_DISABLE_PLUGINS=a,b``: never load these (built-ins included);
- ``STRATA_DISABLE_PLUGIN_AUTOLOAD=1``: scan no entry points except those STRATA_PLUGINS names;
- ``STRATA_STRICT_PLUGINS=1``: a plugin that fails to import or raises in a hook re-raises.
"""

from __future__ import annotations

import enum
import importlib
import threading
import types
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from .. import __version__
from ..errors import PluginError
from . import hookspec, plugin_index
from .arch import ArchRecord
from .hook_types import conforms, hint_name, hook_specs
from .records import (
    Claim,
    Detection,
    DetectionContext,
    Device,
    KernelChoice,
    KernelLibrary,
    RunContext,
    Workload,
)
from .switches import Defaults, Switch

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from .plugin_index import IndexedEntryPoint

ENTRY_POINT_GROUP = "strata.arch"
#: 2: plugins describe their targets (strata_arch_records); a version-1 plugin still loads, and
#: its targets get the core's plain fallback facts
API_VERSION = 2
SUPPORTED_API_VERSIONS = (1, API_VERSION)

BUILTIN_PLUGINS = {
    "core": "strata_core.plan.core_switches",
    "kfd": "strata_core.detect.kfd",
    "hip": "strata_core.detect.hip",
    "pci": "strata_core.detect.pci",
    "nvidia": "strata_core.detect.nvidia",
    "host": "strata_core.host.plugin",
}


class PluginStatus(enum.Enum):
    ACTIVE = "active"
    DISABLED = "disabled"
    NOT_ALLOWED = "not allowed"
    INCOMPATIBLE = "incompatible"
    BROKEN = "broken"


@attrs.frozen
class PluginRecord:
    name: str
    distribution: str
    version: str
    status: PluginStatus
    why: str = ""
    api_version: int | None = None
    targets: tuple[str, ...] = ()
    builtin: bool = False


#: what pluggy takes a hook implementation from; it skips anything else
_HOOKABLE = (types.FunctionType, staticmethod, classmethod, types.MethodType)


def _plain_lookup(plugin: object, name: str) -> object:
    """What ``inspect.getattr_static`` finds for ``name`` where that is a plain dictionary
    look-up: in a module's namespace, or for an instance of an ordinary class (not in the
    instance's own dictionary, no slot, no class with a ``__dict__`` of its own making) in
    its class's MRO; ``NotImplemented`` otherwise."""
    if type(plugin) is types.ModuleType:
        return plugin.__dict__.get(name)
    if isinstance(plugin, type):
        return NotImplemented
    cls = type(plugin)
    try:
        own = object.__getattribute__(plugin, "__dict__")
    except AttributeError:
        own = {}
    if type(cls) is not type or type(own) is not dict or name in own:
        return NotImplemented
    for klass in cls.__mro__:
        namespace = klass.__dict__
        if not isinstance(namespace.get("__dict__"), types.GetSetDescriptorType | None):
            return NotImplemented
        if name in namespace:
            found = namespace[name]
            return NotImplemented if isinstance(found, types.MemberDescriptorType) else found
    return None


class _HookManager(pluggy.PluginManager):
    """pluggy's manager, which skips a plugin's names that cannot be hook implementations (an
    imported class, a constant, a function without the hook mark) by a dictionary look-up
    instead of pluggy's ``inspect.getattr_static`` of each name: a dozen plugins of some 40
    names each, whose parsing was three quarters of the time discovery took. Any name that may
    be a hook, and any plugin of an unusual kind, pluggy parses."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
        found = _plain_lookup(plugin, name)
        if found is not NotImplemented:
            if not isinstance(found, _HOOKABLE):
                return None
            marks = getattr(found, "__dict__", {})
            if type(found) is types.FunctionType and not (
                self.project_name + "_impl" in marks or "__func__" in marks
            ):
                return None
        return super().parse_hookimpl_opts(plugin, name)


def _names(env: Mapping[str, str], key: str) -> list[str]:
    return [n.strip() for n in env.get(key, "").split(",") if n.strip()]


def _flag(env: Mapping[str, str], key: str) -> bool:
    return env.get(key, "").strip().lower() in {"1", "true", "yes", "on"}


class PluginManager:
    """Loads plugins, keeps one record per plugin, and calls hooks one plugin at a time."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.strict = _flag(env, "STRATA_STRICT_PLUGINS")
        self.pm = _HookManager(hookspec.PROJECT)
        self.pm.add_hookspecs(hookspec)
        self.records: dict[str, PluginRecord] = {}
        self.problems: list[str] = []
        #: what each plugin says its targets are, asked once as it is registered
        self._arch_records: dict[str, tuple[ArchRecord, ...]] = {}

    @classmethod
    def discover(cls, env: Mapping[str, str]) -> PluginManager:
        manager = cls(env)
        manager.load_builtins()
        manager.load_entry_points(plugin_index.entry_points(ENTRY_POINT_GROUP, dict(env)))
        return manager

    @classmethod
    def holding(
        cls,
        plugins: Mapping[str, object],
        env: Mapping[str, str] | None = None,
        builtins: Collection[str] = ("core", "host"),
    ) -> PluginManager:
        """A manager with the named built-ins and exactly ``plugins`` (name: plugin object),
        registered as entry points would be: the core's switches and CPU backend, and the
        plugins under test."""
        manager = cls(dict(env or {}))
        manager.load_builtins(only=builtins)
        for name, plugin in plugins.items():
            manager.register(name, plugin, f"{name} (under test)", "0")
        return manager

    def load_builtins(self, only: Collection[str] | None = None) -> None:
        denied = set(_names(self.env, "STRATA_DISABLE_PLUGINS"))
        for name, module in BUILTIN_PLUGINS.items():
            if only is not None and name not in only:
                continue
            if name in denied:
                self._record(
                    name,
                    "strata",
                    __version__,
                    PluginStatus.DISABLED,
                    "named in STRATA_DISABLE_PLUGINS",
                    builtin=True,
                )
                continue
            self.register(
                name, importlib.import_module(module), "strata", __version__, builtin=True
            )

    def load_entry_points(self, eps: Sequence[IndexedEntryPoint | EntryPoint]) -> None:
        allowed = _names(self.env, "STRATA_PLUGINS")
        denied = _names(self.env, "STRATA_DISABLE_PLUGINS")
        autoload = not _flag(self.env, "STRATA_DISABLE_PLUGIN_AUTOLOAD")
        seen: set[str] = set()
        for ep in sorted(eps, key=lambda e: e.name):
            dist = ep.dist.name if ep.dist else "?"
            version = ep.dist.version if ep.dist else "?"
            if ep.name in seen or ep.name in BUILTIN_PLUGINS:
                self.problems.append(
                    f"plugin name {ep.name!r} of {dist} is already taken; {dist}'s is skipped"
                )
                continue
            seen.add(ep.name)
            if ep.name in denied:
                self._record(
                    ep.name, dist, version, PluginStatus.DISABLED, "named in STRATA_DISABLE_PLUGINS"
                )
            elif allowed and ep.name not in allowed:
                self._record(
                    ep.name, dist, version, PluginStatus.NOT_ALLOWED, "not named in STRATA_PLUGINS"
                )
            elif not autoload and ep.name not in allowed:
                self._record(
                    ep.name,
                    dist,
                    version,
                    PluginStatus.NOT_ALLOWED,
                    "STRATA_DISABLE_PLUGIN_AUTOLOAD is set",
                )
            else:
                self._load(ep, dist, version)
        known = seen | set(BUILTIN_PLUGINS)
        for key, names in (("STRATA_PLUGINS", allowed), ("STRATA_DISABLE_PLUGINS", denied)):
            for name in names:
                if name not in known:
                    self.problems.append(
                        f"{key} names {name!r}, which matches no installed plugin "
                        f"(installed: {', '.join(sorted(known))})"
                    )

    def _load(self, ep: IndexedEntryPoint | EntryPoint, dist: str, version: str) -> None:
        try:
            plugin = ep.load()
        except (Exception, SystemExit) as exc:  # a plugin that calls sys.exit is broken too
            if self.strict:
                raise
            why = f"import failed: {type(exc).__name__}: {exc}"
            self._record(ep.name, dist, version, PluginStatus.BROKEN, why)
            self.problems.append(f"plugin {ep.name} ({dist} {version}) skipped: {why}")
            return
        self.register(ep.name, plugin, dist, version)

    def register(
        self, name: str, plugin: object, dist: str, version: str, builtin: bool = False
    ) -> None:
        """Check the plugin's API version, register it, and record the outcome."""
        api = getattr(plugin, "strata_api_version", None)
        if not isinstance(api, int) or isinstance(api, bool) or api not in SUPPORTED_API_VERSIONS:
            stated = (
                "declares no strata_api_version"
                if api is None
                else f"implements strata API {api!r}"
            )
            why = (
                f"{stated}; strata {__version__} supports API "
                f"{', '.join(map(str, SUPPORTED_API_VERSIONS))}"
            )
            self._record(
                name,
                dist,
                version,
                PluginStatus.INCOMPATIBLE,
                why,
                api if isinstance(api, int) else None,
                builtin=builtin,
            )
            self.problems.append(f"plugin {name} ({dist} {version}) disabled: {why}")
            return
        try:
            self.pm.register(plugin, name=name)
            self.pm.check_pending()
        except (pluggy.PluginValidationError, ValueError) as exc:
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            if self.strict:
                raise PluginError(f"plugin {name}: {exc}") from exc
            self._record(name, dist, version, PluginStatus.BROKEN, str(exc), api, builtin=builtin)
            self.problems.append(f"plugin {name} ({dist} {version}) skipped: {exc}")
            return
        self._record(name, dist, version, PluginStatus.ACTIVE, "", api, builtin=builtin)
        targets = self._call("strata_arch_targets", (name,))
        if targets and name in self.records:
            self.records[name] = attrs.evolve(self.records[name], targets=targets[0][1])
        self._arch_records.update(self._call("strata_arch_records", (name,)))

    def _record(
        self,
        name: str,
        dist: str,
        version: str,
        status: PluginStatus,
        why: str,
        api: int | None = None,
        builtin: bool = False,
    ) -> None:
        self.records[name] = PluginRecord(name, dist, version, status, why, api, builtin=builtin)

    def active(self) -> list[str]:
        return [n for n, r in self.records.items() if r.status is PluginStatus.ACTIVE]

    def _call(
        self,
        hook_name: str,
        only: Collection[str] | None,
        side_by_side: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """Call every implementation of a hook (or those of the ``only`` plugins) on its own,
        in registration order, or ``side_by_side`` in threads, and return (plugin name,
        result) for each non-None result, in registration order.

        The caller's arguments are checked against the hook spec first: a wrong one is the
        caller's bug and raises TypeError, blaming no plugin. A plugin that raises, or returns
        something other than the spec's return type, is reported, unregistered and skipped.
        """
        spec = hook_specs()[hook_name]
        spec.check_arguments(kwargs)
        impls = [
            impl
            for impl in getattr(self.pm.hook, hook_name).get_hookimpls()
            if only is None or impl.plugin_name in only
        ]

        def answer(impl: Any) -> tuple[Any, BaseException | None]:
            try:
                result = impl.function(*(kwargs[arg] for arg in impl.argnames))
                if result is not None and not conforms(result, spec.returns):
                    raise PluginError(
                        f"returned {_describe(result)}, expected {hint_name(spec.returns)}"
                    )
            except (Exception, SystemExit) as exc:
                if self.strict and not side_by_side:
                    raise
                return None, exc
            return result, None

        if side_by_side and len(impls) > 1:
            answers: list[tuple[Any, BaseException | None]] = [(None, None)] * len(impls)

            def store(n: int, impl: Any) -> None:
                answers[n] = answer(impl)

            threads = [threading.Thread(target=store, args=item) for item in enumerate(impls)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        else:
            answers = [answer(impl) for impl in impls]
        results = []
        for impl, (result, exc) in zip(impls, answers, strict=True):
            if exc is not None:
                if self.strict:
                    raise exc
                self._fail(impl.plugin_name, f"{hook_name} raised {type(exc).__name__}: {exc}")
            elif result is not None:
                results.append((impl.plugin_name, result))
        return results

    def detections(self, context: DetectionContext) -> list[tuple[str, Detection]]:
        """Every detector's report (strata_detect_devices), the detectors called side by side
        so that the runtimes' probes, which wait on child processes, run at the same time."""
        return self._call("strata_detect_devices", None, side_by_side=True, context=context)

    def arch_records(self) -> dict[str, ArchRecord]:
        """Every target's record (strata_arch_records, asked as each plugin was registered),
        each marked with the plugin that describes it; where two plugins describe one target,
        the first registered wins and the other is named in a problem line."""
        records: dict[str, ArchRecord] = {}
        active = set(self.active())
        for name, answer in self._arch_records.items():
            if name not in active:
                continue
            for record in answer:
                first = records.get(record.target)
                if first is None:
                    records[record.target] = attrs.evolve(record, described_by=name)
                elif first != attrs.evolve(record, described_by=first.described_by):
                    line = (
                        f"plugins {first.described_by} and {name} both describe "
                        f"{record.target}, differently; {first.described_by}'s facts are used"
                    )
                    if line not in self.problems:
                        self.problems.append(line)
        return records

    def claims(self, device: Device) -> list[tuple[str, Claim]]:
        """Every plugin's claim on ``device`` (strata_claim_device)."""
        return self._call("strata_claim_device", None, device=device)

    def switch_declarations(
        self, plugins: Collection[str] | None = None
    ) -> list[tuple[str, tuple[Switch, ...]]]:
        """The switches each plugin (or each of ``plugins``) declares."""
        return self._call("strata_declare_switches", plugins)

    def switch_defaults(
        self, plugins: Collection[str], device: Device, context: RunContext
    ) -> list[tuple[str, Defaults]]:
        """The defaults ``plugins`` give for ``device`` in ``context``."""
        return self._call("strata_switch_defaults", plugins, device=device, context=context)

    def tuning_dirs(self, plugin: str, device: Device) -> tuple[Path, ...]:
        """The folders of tuning tables ``plugin`` ships for ``device``."""
        answers = self._call("strata_tuning_dirs", (plugin,), device=device)
        return answers[0][1] if answers else ()

    def kernel_choices(
        self,
        plugin: str,
        device: Device,
        context: RunContext,
        switches: Mapping[str, str | None],
        workload: Workload,
    ) -> tuple[KernelChoice, ...]:
        """The variant of each operation ``plugin`` runs on ``device``."""
        answers = self._call(
            "strata_select_kernels",
            (plugin,),
            device=device,
            context=context,
            switches=switches,
            workload=workload,
        )
        return answers[0][1] if answers else ()

    def kernel_libraries(self, plugins: Collection[str] | None = None) -> dict[str, KernelLibrary]:
        """Each GPU plugin's kernel library, by plugin name."""
        return dict(self._call("strata_kernel_library", plugins))

    def _fail(self, name: str, why: str) -> None:
        record = self.records[name]
        self.records[name] = attrs.evolve(record, status=PluginStatus.BROKEN, why=why)
        self.problems.append(
            f"plugin {name} ({record.distribution} {record.version}) skipped: {why}"
        )
        plugin = self.pm.get_plugin(name)
        if plugin is not None:
            self.pm.unregister(plugin)


def _describe(value: object) -> str:
    if isinstance(value, tuple) and value:
        kinds = ", ".join(dict.fromkeys(type(v).__name__ for v in value))
        return f"a tuple of {kinds}"
    return type(value).__name__
