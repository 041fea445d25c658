"""strata plugin for Instinct MI50 / MI60 and Radeon VII, as the wave64 compat build."""

from strata_core.api import ArchPlugin, Rule, Switch

OFF_ON = ("0", "1")
SECTION = "gfx906"

# name, values, meaning, changes bits, what the build does unset; AMD_HIP.md "gfx906".
# fmt: off
_SWITCHES = (
    ("STRATA_GFX906_ATTN_QUERY_SWIZZLE", OFF_ON, "gfx906 attention query swizzle", True, "off"),
    ("STRATA_GFX906_ATTN_REDUCE12", OFF_ON, "gfx906 attention 12-way reduction", True, "off"),
    ("STRATA_EXP_MODE", ("2", "7"), "grouped native experts: mode 7 (dp4a signs, LDS grids); "
     "=2 restores the CUDA layout", False, "mode 7"),
    ("STRATA_MMVQ_WAVE", OFF_ON, "MMVQ with one wavefront per row and a 64-lane butterfly; "
     "=0 restores the CUDA layout", False, "on"),
    ("STRATA_ROUTE_PER_TOKEN", OFF_ON, "=1 routes each verify-window token on its own",
     False, "off"),
    ("STRATA_GR_FAST", OFF_ON, "hyper-connection read with norm loads in flight; =0 restores "
     "the CUDA layout", False, "on"),
    ("STRATA_GR_SPLIT", OFF_ON, "gr_down_multi split along K (sums in another order)", True,
     "off"),
)
# fmt: on


class GFX906(ArchPlugin):
    """Wave size: AMD_HIP.md "gfx906 (Instinct MI50 / MI60, Radeon VII): wave64"; the targets are
    the build's (pyproject.toml)."""

    strata_api_version = 2
    wave_size = 64
    switches = tuple(Switch(*row, targets=("gfx906",), section=SECTION) for row in _SWITCHES)
    rules = (
        Rule(
            "STRATA_FILE_CACHE_OLD_RULE",
            "1",
            "gfx906 keeps the old file-tier cache rule (AMD_HIP.md, RDNA2 switches)",
        ),
        Rule(
            "--pipeline-windows",
            "0",
            "off by default on gfx906; try 2 with two cards (AMD_HIP.md, gfx906)",
        ),
    )


plugin = GFX906()
