"""strata plugin for the AMD Instinct MI300X and MI325X (gfx942, CDNA3).

The engine's page (AMD_HIP.md) does not name gfx942: what the target is comes from this
package's arch.toml (LLVM's AMDGPU processor table, libdrm's amdgpu.ids), and its defaults are
this plugin's own choices, said as such. Everything else (the prompt-GEMM library, the packaged
hipBLASLt table, STRATA_HIP_WMMA) stays the engine's.
"""

from strata_core.api import ArchPlugin, Rule

OWN_CHOICE = "this plugin's choice, not AMD_HIP.md's"


class MI300X(ArchPlugin):
    """Wave size: gfx942 is wave64 (LLVM's AMDGPU processor table); the targets are the
    build's (pyproject.toml)."""

    strata_api_version = 2
    wave_size = 64
    rules = (
        Rule(
            "STRATA_MTP_SIDE_STREAM",
            "1",
            f"on: MI300X has 304 CUs to spare for the draft stream ({OWN_CHOICE})",
        ),
        Rule(
            "STRATA_SH_STREAM",
            "1",
            f"on: the shared-expert fork has CUs to spare too; output identical ({OWN_CHOICE})",
        ),
    )


plugin = MI300X()
