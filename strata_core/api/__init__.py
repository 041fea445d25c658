"""What a plugin author sees: the hook specs and their marker, the records hooks take and
return, switches and their rules, the arch plugin base, the kernel choices the reference page
makes, and the plugin manager. Plugins import from here only."""

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from ..archdb import compute_capability, newest_ptx_for
    from .arch_plugin import EXACT_MATCH, PATTERN_MATCH, ArchPlugin
    from .hookspec import hookimpl
    from .kernels import hip_choices, router_choice, topk_choice, topk_choices
    from .manager import API_VERSION, PluginManager
    from .records import (
        Claim,
        Detection,
        DetectionContext,
        Device,
        DeviceReport,
        KernelChoice,
        KernelLibrary,
        RunContext,
        Workload,
    )
    from .switches import INTEGER, NUMBER, PATH, Default, Defaults, Rule, Switch
    from .vocabulary import GGUF_PACKS, KV_TYPES, NATIVE_PACKS, OS_NAMES, PACKS

#: where each name lives; a name is imported when it is first used, so that importing a part of
#: the core (the command line, the plan) does not import the whole face
_HOMES = {
    "API_VERSION": ".manager",
    "EXACT_MATCH": ".arch_plugin",
    "GGUF_PACKS": ".vocabulary",
    "INTEGER": ".switches",
    "KV_TYPES": ".vocabulary",
    "NATIVE_PACKS": ".vocabulary",
    "NUMBER": ".switches",
    "OS_NAMES": ".vocabulary",
    "PACKS": ".vocabulary",
    "PATH": ".switches",
    "PATTERN_MATCH": ".arch_plugin",
    "ArchPlugin": ".arch_plugin",
    "Claim": ".records",
    "Default": ".switches",
    "Defaults": ".switches",
    "Detection": ".records",
    "DetectionContext": ".records",
    "Device": ".records",
    "DeviceReport": ".records",
    "KernelChoice": ".records",
    "KernelLibrary": ".records",
    "PluginManager": ".manager",
    "Rule": ".switches",
    "RunContext": ".records",
    "Switch": ".switches",
    "Workload": ".records",
    "compute_capability": "..archdb",
    "hip_choices": ".kernels",
    "hookimpl": ".hookspec",
    "newest_ptx_for": "..archdb",
    "router_choice": ".kernels",
    "topk_choice": ".kernels",
    "topk_choices": ".kernels",
}


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name], __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "API_VERSION",
    "EXACT_MATCH",
    "GGUF_PACKS",
    "INTEGER",
    "KV_TYPES",
    "NATIVE_PACKS",
    "NUMBER",
    "OS_NAMES",
    "PACKS",
    "PATH",
    "PATTERN_MATCH",
    "ArchPlugin",
    "Claim",
    "Default",
    "Defaults",
    "Detection",
    "DetectionContext",
    "Device",
    "DeviceReport",
    "KernelChoice",
    "KernelLibrary",
    "PluginManager",
    "Rule",
    "RunContext",
    "Switch",
    "Workload",
    "compute_capability",
    "hip_choices",
    "hookimpl",
    "newest_ptx_for",
    "router_choice",
    "topk_choice",
    "topk_choices",
]
