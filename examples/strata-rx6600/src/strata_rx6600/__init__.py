"""strata plugin for the RX 6600 / 6600 XT (gfx1032).

AMD_HIP.md lists gfx1032 as unvalidated: it ran under Windows as the helper expert GPU of an
RX 6800, and there is no report of it as a primary card. It is RDNA2 (wave32, no WMMA, the
signed dot4), so the gfx103x defaults apply.
"""

from strata_core.api import ArchPlugin, Defaults, Device, Rule, RunContext, hookimpl

UNVALIDATED = (
    "gfx1032 is unvalidated as a primary card: it has run only as the helper expert GPU of "
    "an RX 6800 (AMD_HIP.md, gfx1032). Please report how it runs."
)


class RX6600(ArchPlugin):
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
        return Defaults(defaults.values, defaults.log, warnings=(UNVALIDATED,))


plugin = RX6600()
