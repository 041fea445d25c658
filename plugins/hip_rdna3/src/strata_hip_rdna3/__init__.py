"""strata plugin for RX 7900 XT / XTX, RX 7800 XT / 7700 XT and RX 7600 XT."""

from strata_core.api import ArchPlugin


class RDNA3(ArchPlugin):
    """Wave size: AMD_HIP.md "Supported cards" and "Community-validated cards"; the targets are
    the build's (pyproject.toml)."""

    strata_api_version = 2
    wave_size = 32


plugin = RDNA3()
