"""Built-in plugin ``host``: the CPU backend that runs when no AMD GPU can, and the CPU pool
that computes the experts missing from a card."""

from __future__ import annotations

from collections.abc import Mapping

from ..api.hookspec import hookimpl
from ..api.kernels import router_choice
from ..api.records import Claim, Device, KernelChoice, RunContext, Workload
from ..api.switches import Switch
from .platform import KERNEL_ISAS, cpu_name, kernel_isa
from .topk_bands import host_topk_choices

strata_api_version = 2

HOST_TARGET = "host"
SWITCHES = (
    Switch(
        "STRATA_HOST_ISA",
        tuple(name for name, _ in reversed(KERNEL_ISAS)),
        "run the host kernels with this instruction set, up to the best the CPU has",
        False,
        "the best the CPU has",
        targets=(HOST_TARGET,),
        section="strata host backend",
    ),
)


def host_device() -> Device:
    return Device(
        index=None,
        name=cpu_name(),
        gfx=HOST_TARGET,
        physical_gfx=HOST_TARGET,
        family="CPU",
        wave_size=None,
        vram_bytes=None,
        integrated=False,
        integrated_evidence="the host CPU",
        seen_by=(HOST_TARGET,),
        vendor="cpu",
    )


def matvec_reason(asked: str | None, isa: str) -> str:
    if asked is None:
        return f"the best of the CPU's instruction sets ({isa})"
    if asked not in SWITCHES[0].values:
        return f"STRATA_HOST_ISA={asked} names no instruction set; the best the CPU has ({isa})"
    if asked != isa:
        return f"STRATA_HOST_ISA={asked}: this CPU lacks it; the best it has ({isa})"
    return f"STRATA_HOST_ISA={asked}"


@hookimpl
def strata_arch_targets() -> tuple[str, ...]:
    return (HOST_TARGET,)


@hookimpl
def strata_claim_device(device: Device) -> Claim | None:
    if device.gfx != HOST_TARGET:
        return None
    return Claim(100, "runs on the CPU")


@hookimpl
def strata_declare_switches() -> tuple[Switch, ...]:
    return SWITCHES


@hookimpl
def strata_select_kernels(
    device: Device, context: RunContext, switches: Mapping[str, str | None], workload: Workload
) -> tuple[KernelChoice, ...]:
    isa = kernel_isa(switches.get("STRATA_HOST_ISA"))
    router = router_choice(switches)
    if router.variant == "fast" and isa == "baseline":
        router = KernelChoice(
            "router_topk", "portable", "the fast router needs AVX2; the kernels run baseline"
        )
    return (
        KernelChoice(
            "matvec_q8_0",
            isa,
            matvec_reason(switches.get("STRATA_HOST_ISA"), isa),
        ),
        router,
        *host_topk_choices(switches, isa, workload.context_cells, workload.cells_kept),
        KernelChoice("prompt_gemm", "blas", "numpy's BLAS"),
    )
