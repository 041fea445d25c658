"""strata plugin for RX 6800 / 6900 series and RX 6700 XT."""

from strata_core.api import ArchPlugin, Defaults, Device, Rule, RunContext, hookimpl

F16_TIP = (
    "tip: STRATA_HIP_PROMPT_F16=1 runs the 16-bit prompt GEMMs FP16 in and out; "
    "RDNA2 prompts read up to 2x faster with it (not bit-identical; AMD_HIP.md, RDNA2)"
)


class RDNA2(ArchPlugin):
    """Wave size: AMD_HIP.md "Supported cards" and "RDNA2 (gfx1030)"; the targets are
    the build's (pyproject.toml)."""

    strata_api_version = 2
    wave_size = 32
    rules = (
        Rule(
            "STRATA_MTP_SIDE_STREAM",
            "1",
            "on for gfx103x (AMD_HIP.md, Switches for shared-expert and draft streams)",
        ),
    )

    @hookimpl
    def strata_switch_defaults(self, device: Device, context: RunContext) -> Defaults:
        defaults = super().strata_switch_defaults(device, context)
        if "STRATA_HIP_PROMPT_F16" in context.given:
            return defaults
        return Defaults(defaults.values, log=(F16_TIP,))


plugin = RDNA2()
