"""strata plugin for Instinct MI50 / MI60 and Radeon VII, as the wave64 compat build."""

from strata_core.arch_plugin import ArchPlugin


class GFX906(ArchPlugin):
    """Targets and wave size: AMD_HIP.md "gfx906 (Instinct MI50 / MI60, Radeon VII): wave64"."""

    strata_api_version = 1
    targets = ("gfx906",)
    wave_size = 64


plugin = GFX906()
