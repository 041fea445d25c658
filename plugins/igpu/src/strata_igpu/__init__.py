"""strata plugin for integrated Radeon GPUs: 780M / 760M, 890M / 880M, Strix Halo 8060S, 860M / 840M."""

from strata_core.arch_plugin import ArchPlugin


class IntegratedGPU(ArchPlugin):
    """Targets and wave size: AMD_HIP.md "Integrated GPUs (mini PCs)" and "Supported cards"."""

    strata_api_version = 1
    targets = ("gfx1103", "gfx1150", "gfx1151", "gfx1152")
    wave_size = 32


plugin = IntegratedGPU()
