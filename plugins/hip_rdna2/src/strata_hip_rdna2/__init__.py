"""strata plugin for RX 6800 / 6900 series and RX 6700 XT."""

from strata_core.arch_plugin import ArchPlugin


class RDNA2(ArchPlugin):
    """Targets and wave size: AMD_HIP.md "Supported cards" and "RDNA2 (gfx1030)"."""

    strata_api_version = 1
    targets = ("gfx1030", "gfx1031")
    wave_size = 32


plugin = RDNA2()
