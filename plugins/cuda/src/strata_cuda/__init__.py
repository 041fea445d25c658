"""strata plugin for NVIDIA GPUs: the project's kernel library built as PTX, one module per
compute capability, run through the CUDA driver (AMD_HIP.md: "Setup picks --backend hip by
itself on a PC with no NVIDIA card Strata can use"; with one, the CUDA backend runs). No HIP
switch default applies to it. Its prompt GEMMs run through cuBLASLt, with a tuning table
calibrated on the card (`strata-core tune`) where one is asked for."""

from collections.abc import Mapping

from strata_core.api import (
    EXACT_MATCH,
    PATH,
    PATTERN_MATCH,
    ArchPlugin,
    Claim,
    Device,
    KernelChoice,
    RunContext,
    Switch,
    Workload,
    compute_capability,
    hookimpl,
    newest_ptx_for,
    router_choice,
    topk_choices,
)

TABLES = "Tuning tables"
#: cuBLASLt's table switches, as hipBLASLt's (AMD_HIP.md "Tuning tables"): the page takes a
#: table by default only on gfx1151, so here only when asked for
SWITCHES = (
    Switch("STRATA_CUBLASLT_TABLE", ("on", "off"), "use the cuBLASLt tuning table when it "
           "matches the architecture and version", True, "off", section=TABLES),
    Switch("STRATA_CUBLASLT_TUNING", (PATH,), "this cuBLASLt table file, always kept", True,
           "no file", section=TABLES),
    Switch("STRATA_CUBLASLT_VERBOSE", ("0", "1"), "print the tuned solution per shape and a "
           "tuned_launches=... fallbacks=... summary at exit", False, "off", section=TABLES),
)  # fmt: skip


class Cuda(ArchPlugin):
    """Claims NVIDIA devices by compute capability: its own PTX exactly, a newer card through
    the driver's compilation of the newest PTX at or below it. The targets are the build's
    (pyproject.toml)."""

    strata_api_version = 2
    wave_size = 32
    switches = SWITCHES

    @hookimpl
    def strata_claim_device(self, device: Device) -> Claim:
        if device.vendor != "nvidia":
            return Claim.refuse(f"runs NVIDIA GPUs; {device.gfx} is not one")
        if device.wave_size not in (None, self.wave_size):
            return Claim.refuse(f"runs warps of 32; {device.gfx} is wave{device.wave_size}")
        if compute_capability(device.gfx) is None:
            return Claim.refuse(
                f"needs the compute capability of {device.name}, which only the NVIDIA driver says"
            )
        if device.gfx in self.carried_targets:
            return Claim(EXACT_MATCH, f"carries PTX for {device.gfx}")
        newest = newest_ptx_for(self.carried_targets, device.gfx)
        if newest is None:
            return Claim.refuse(
                f"carries PTX for {', '.join(self.carried_targets)}, all newer than {device.gfx}"
            )
        return Claim(
            PATTERN_MATCH, f"runs its {newest} PTX on {device.gfx} (the driver compiles it)"
        )

    @hookimpl
    def strata_select_kernels(
        self,
        device: Device,
        context: RunContext,
        switches: Mapping[str, str | None],
        workload: Workload,
    ) -> tuple[KernelChoice, ...]:
        return (
            KernelChoice("matvec_q8_0", "dp4a", "NVIDIA's int8 dot4 (dp4a, sm_61 and newer)"),
            router_choice(switches),
            *topk_choices(switches, workload.context_cells),
            KernelChoice(
                "prompt_gemm",
                "cublaslt",
                "the prompt GEMMs run through cuBLASLt (FP16 in, FP32 out)",
            ),
        )


plugin = Cuda()
