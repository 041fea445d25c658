"""strata plugin for RX 7900 XT / XTX, RX 7800 XT / 7700 XT and RX 7600 XT."""

from strata_core.arch_plugin import ArchPlugin


class RDNA3(ArchPlugin):
    """Targets and wave size: AMD_HIP.md "Supported cards" and "Community-validated cards"."""

    strata_api_version = 1
    targets = ("gfx1100", "gfx1101", "gfx1102")
    wave_size = 32


plugin = RDNA3()
