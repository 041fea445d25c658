"""Kernel selection rules shared by the backends: which variant of each operation a device,
its switches and the workload's shapes allow, and which library path the engine's prompt GEMMs
take (AMD_HIP.md, "Speed switches", "Deep contexts", "RDNA2", "gfx906")."""

from __future__ import annotations

from collections.abc import Mapping

from ..digits import is_digits
from .arch import ROCBLAS, MatrixCores
from .records import Device, KernelChoice, RunContext, Workload

#: AMD_HIP.md, "Deep contexts": "Past about 135K cells (and from about 90K cells on a prompt
#: read) the top-k selection runs the wide kernel"; "Speed switches": STRATA_TOPK_STREAM=0 runs
#: "the register kernel in the 90K-135K band".
WIDE_PAST_CELLS = 135_000
WIDE_FROM_CELLS_ON_A_PROMPT_READ = 90_000
WMMA_MIN_QUERIES = 64
#: the top-k of a decode step and the one of a prompt read
TOPK_OPS = {False: "topk", True: "topk_prompt"}


def topk_switched(
    switches: Mapping[str, str | None], cells: int, prompt_read: bool
) -> KernelChoice | None:
    """The top-k a switch the user set runs, on every backend: the original kernel under
    STRATA_TOPK_OLD=1, the register kernel under STRATA_TOPK_STREAM=0 on a prompt read in the
    90K-135K band; None where no switch decides."""
    op = TOPK_OPS[prompt_read]
    if switches.get("STRATA_TOPK_OLD") == "1":
        return KernelChoice(op, "old", "STRATA_TOPK_OLD=1: 'Run the original top-k kernel'")
    if (
        prompt_read
        and switches.get("STRATA_TOPK_STREAM") == "0"
        and WIDE_FROM_CELLS_ON_A_PROMPT_READ <= cells <= WIDE_PAST_CELLS
    ):
        return KernelChoice(
            op,
            "register",
            f"{cells} cells on a prompt read: STRATA_TOPK_STREAM=0 runs 'the register kernel "
            "in the 90K-135K band'",
        )
    return None


def topk_choice(switches: Mapping[str, str | None], cells: int, prompt_read: bool) -> KernelChoice:
    """The engine's top-k by the page's bands, unless a switch decides (topk_switched); "old"
    is the reference radix on the GPU."""
    switched = topk_switched(switches, cells, prompt_read)
    if switched is not None:
        return switched
    op = TOPK_OPS[prompt_read]
    if cells > WIDE_PAST_CELLS:
        return KernelChoice(
            op,
            "wide",
            f"{cells} cells: 'Past about 135K cells ... the top-k selection runs the wide "
            "kernel ... with the same ids as the reference radix'",
        )
    if prompt_read and cells >= WIDE_FROM_CELLS_ON_A_PROMPT_READ:
        return KernelChoice(
            op,
            "wide",
            f"{cells} cells on a prompt read: '(and from about 90K cells on a prompt read) the "
            "top-k selection runs the wide kernel'",
        )
    band = "90K" if prompt_read else "135K"
    return KernelChoice(op, "register", f"{cells} cells: below {band} the register kernel")


def topk_choices(switches: Mapping[str, str | None], cells: int) -> tuple[KernelChoice, ...]:
    """The engine's top-k for a decode step and for a prompt read over ``cells`` cells."""
    return tuple(topk_choice(switches, cells, prompt_read) for prompt_read in TOPK_OPS)


def router_choice(switches: Mapping[str, str | None]) -> KernelChoice:
    if switches.get("STRATA_HIP_ROUTER_OLD") == "1":
        return KernelChoice("router_topk", "portable", "STRATA_HIP_ROUTER_OLD=1")
    # the HIP build's switch: an NVIDIA plan does not hold it
    unset = " (STRATA_HIP_ROUTER_OLD unset)" if "STRATA_HIP_ROUTER_OLD" in switches else ""
    return KernelChoice("router_topk", "fast", f"the fast router{unset}")


def attention_choice(
    device: Device, context: RunContext, switches: Mapping[str, str | None], workload: Workload
) -> KernelChoice:
    arch = device.arch
    wmma = switches.get("STRATA_HIP_WMMA")
    if arch is None or arch.matrix_cores is None:
        return KernelChoice(
            "prompt_attention", "fp32", f"no installed plugin describes {device.gfx}'s matrix cores"
        )
    if arch.matrix_cores is MatrixCores.NONE:
        return KernelChoice("prompt_attention", "fp32", f"{device.gfx} has no matrix cores")
    if arch.matrix_cores is not MatrixCores.WMMA:
        return KernelChoice(
            "prompt_attention",
            "fp32",
            f"{device.gfx}'s matrix cores are {arch.matrix_cores.value}; the engine's "
            "matrix-core attention is written for WMMA",
        )
    if arch.portable_kernels:
        return KernelChoice(
            "prompt_attention", "fp32", f"{device.gfx} builds with a warning; portable kernels"
        )
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
        minimum = int(raw) if raw and is_digits(raw) else WMMA_MIN_QUERIES
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


def prompt_gemm_choice(device: Device, switches: Mapping[str, str | None]) -> KernelChoice:
    """The library path of the engine's prompt GEMMs (AMD_HIP.md: "Speed switches", "RDNA2",
    "gfx906"); with_tables adds the tuning table the plan takes."""
    arch = device.arch
    sgemm, f16 = switches.get("STRATA_RDNA2_SGEMM"), switches.get("STRATA_HIP_PROMPT_F16") == "1"
    if arch is not None and arch.table_library == ROCBLAS:
        if f16 and sgemm in ("1", "all"):
            return KernelChoice(
                "prompt_gemm",
                "rocblas-f16+sgemm",
                f"rocBLAS, STRATA_HIP_PROMPT_F16=1 and STRATA_RDNA2_SGEMM={sgemm}: the FP16 "
                "route runs first and SGEMM takes the products it leaves",
            )
        if f16:
            return KernelChoice(
                "prompt_gemm",
                "rocblas-f16",
                "rocBLAS, STRATA_HIP_PROMPT_F16=1: the 16-bit prompt GEMMs FP16 in and out",
            )
        if sgemm in ("1", "all"):
            return KernelChoice(
                "prompt_gemm",
                "rocblas-sgemm",
                f"rocBLAS, STRATA_RDNA2_SGEMM={sgemm}: both inputs widened to FP32, SGEMM",
            )
        return KernelChoice(
            "prompt_gemm",
            "rocblas",
            f"{device.gfx}: hipBLASLt ships no gfx1030 kernels, so the plain hipBLAS path runs "
            "(rocBLAS, FP16 in, FP32 out)",
        )
    if sgemm == "all":
        return KernelChoice(
            "prompt_gemm",
            "hipblas-sgemm",
            "STRATA_RDNA2_SGEMM=all: both inputs widened to FP32, SGEMM, on any AMD card",
        )
    if switches.get("STRATA_PF_GEMM") == "1":
        if arch is not None and arch.wmma_prompt_gemm:
            return KernelChoice(
                "prompt_gemm",
                "wmma",
                "STRATA_PF_GEMM=1: the prompt's FP16 projections on the 128 x 256 WMMA GEMM",
            )
        why = (
            "builds portable kernels"
            if arch is not None and arch.portable_kernels
            else "is not gfx11 (STRATA_PF_GEMM is gfx11 only; RDNA4 runs neither)"
        )
        return KernelChoice(
            "prompt_gemm", "hipblas", f"the prompt GEMMs run through hipBLAS: {device.gfx} {why}"
        )
    if arch is not None and arch.described_by and arch.table_library is None:
        return KernelChoice(
            "prompt_gemm",
            "hipblas",
            f"{device.gfx}: hipBLAS (rocBLAS with {device.gfx} kernels); hipBLASLt is not used",
        )
    return KernelChoice("prompt_gemm", "hipblas", "the prompt GEMMs run through hipBLAS")


def matvec_choice(device: Device) -> KernelChoice:
    """The int8 dot instruction of the matvec: the one the target's plugin names."""
    dot = device.arch.int8_dot if device.arch is not None else None
    if dot is None:
        return KernelChoice(
            "matvec_q8_0",
            "v_dot4_i32_i8",
            f"no installed plugin describes {device.gfx}'s int8 dot instruction; "
            "v_dot4_i32_i8 assumed",
        )
    return KernelChoice("matvec_q8_0", dot, f"{device.gfx}'s int8 dot instruction")


def hip_choices(
    device: Device, context: RunContext, switches: Mapping[str, str | None], workload: Workload
) -> tuple[KernelChoice, ...]:
    """What a HIP build of the engine runs on this device."""
    return (
        matvec_choice(device),
        router_choice(switches),
        *topk_choices(switches, workload.context_cells),
        prompt_gemm_choice(device, switches),
        attention_choice(device, context, switches, workload),
    )
