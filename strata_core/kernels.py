"""Kernel selection rules shared by the backends: which variant of each operation a device,
its switches and the workload's shapes allow (AMD_HIP.md, "Speed switches", "Deep contexts",
"RDNA2", "gfx906")."""

from __future__ import annotations

from collections.abc import Mapping

from . import archdb
from .records import Device, KernelChoice, RunContext, Workload

#: AMD_HIP.md, "Deep contexts": the wide kernel past about 135K cells, and from about 90K
#: cells on a prompt read, where STRATA_TOPK_STREAM=0 skips the register kernel.
WIDE_FROM_CELLS = 135_000
REGISTER_BAND = (90_000, 135_000)
WMMA_MIN_QUERIES = 64


def topk_choice(switches: Mapping[str, str | None], cells: int) -> KernelChoice:
    if switches.get("STRATA_TOPK_OLD") == "1":
        return KernelChoice("topk", "old", "STRATA_TOPK_OLD=1 runs the original top-k kernel")
    if cells > WIDE_FROM_CELLS:
        return KernelChoice(
            "topk", "wide", f"{cells} cells: past {WIDE_FROM_CELLS} the wide kernel runs"
        )
    low, high = REGISTER_BAND
    if low <= cells <= high and switches.get("STRATA_TOPK_STREAM") == "0":
        return KernelChoice(
            "topk",
            "wide",
            f"{cells} cells in the {low}-{high} band and "
            "STRATA_TOPK_STREAM=0: the register kernel is skipped",
        )
    return KernelChoice("topk", "heap", f"{cells} cells: the register (heap) kernel")


def gpu_topk_choice(switches: Mapping[str, str | None], cells: int) -> KernelChoice:
    """The GPU kernel library has one top-k kernel; the reason keeps the engine's band."""
    engine = topk_choice(switches, cells)
    return KernelChoice(
        "topk",
        "radix",
        f"the GPU kernel library's one top-k kernel (a radix select) serves every band; "
        f"the engine: {engine.reason}",
    )


def router_choice(switches: Mapping[str, str | None]) -> KernelChoice:
    if switches.get("STRATA_HIP_ROUTER_OLD") == "1":
        return KernelChoice("router_topk", "portable", "STRATA_HIP_ROUTER_OLD=1")
    return KernelChoice("router_topk", "fast", "the fast router (STRATA_HIP_ROUTER_OLD unset)")


def attention_choice(
    device: Device, context: RunContext, switches: Mapping[str, str | None], workload: Workload
) -> KernelChoice:
    arch = archdb.lookup(device.gfx)
    wmma = switches.get("STRATA_HIP_WMMA")
    if arch is None or not arch.matrix_cores:
        return KernelChoice("prompt_attention", "fp32", f"{device.gfx} has no matrix cores")
    if wmma not in ("1", "auto"):
        return KernelChoice("prompt_attention", "fp32", "STRATA_HIP_WMMA is off")
    if context.kv != "int8":
        return KernelChoice(
            "prompt_attention",
            "fp32",
            f"WMMA attention needs --kv int8, not {context.kv or 'an unknown KV type'}",
        )
    if wmma == "auto":
        raw = switches.get("STRATA_HIP_WMMA_MIN_Q")
        minimum = int(raw) if raw and raw.isdigit() else WMMA_MIN_QUERIES
        if workload.prompt_queries < minimum:
            return KernelChoice(
                "prompt_attention",
                "fp32",
                f"STRATA_HIP_WMMA=auto and {workload.prompt_queries} queries, fewer than {minimum}",
            )
        return KernelChoice(
            "prompt_attention",
            "wmma",
            f"STRATA_HIP_WMMA=auto and {workload.prompt_queries} queries, at least {minimum}",
        )
    return KernelChoice("prompt_attention", "wmma", "STRATA_HIP_WMMA=1 with int8 KV")


def hip_choices(
    device: Device, context: RunContext, switches: Mapping[str, str | None], workload: Workload
) -> tuple[KernelChoice, ...]:
    """What a HIP build of the engine runs on this device."""
    arch = archdb.lookup(device.gfx)
    dot = arch.int8_dot if arch else "v_dot4_i32_i8"
    matrix = arch is not None and arch.matrix_cores
    return (
        KernelChoice("matvec_q8_0", dot, f"{device.gfx}'s int8 dot instruction"),
        router_choice(switches),
        gpu_topk_choice(switches, workload.context_cells),
        KernelChoice(
            "prompt_gemm",
            "wmma" if matrix else "fma",
            f"{device.gfx} {'has' if matrix else 'has no'} matrix cores",
        ),
        attention_choice(device, context, switches, workload),
    )
