"""What a plugin author sees: the hook specs and their marker, the records hooks take and
return, switches and their rules, the arch plugin base, the kernel choices the reference page
makes, and the plugin manager. Plugins import from here only."""

from ..archdb import compute_capability, newest_ptx_for
from .arch_plugin import EXACT_MATCH, PATTERN_MATCH, ArchPlugin
from .hookspec import hookimpl
from .kernels import gpu_topk_choices, hip_choices, router_choice, topk_choice
from .manager import API_VERSION, PluginManager
from .records import (
    GGUF_PACKS,
    KV_TYPES,
    NATIVE_PACKS,
    OS_NAMES,
    PACKS,
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
    "gpu_topk_choices",
    "hip_choices",
    "hookimpl",
    "newest_ptx_for",
    "router_choice",
    "topk_choice",
]
