"""strata plugin for RX 9060 XT, RX 9070 / 9070 XT and Radeon AI PRO R9700."""

from strata_core.arch_plugin import ArchPlugin


class RDNA4(ArchPlugin):
    """Targets and wave size: AMD_HIP.md "Supported cards" and "RDNA4 (gfx1201)"."""

    strata_api_version = 1
    targets = ("gfx1200", "gfx1201")
    wave_size = 32


plugin = RDNA4()
