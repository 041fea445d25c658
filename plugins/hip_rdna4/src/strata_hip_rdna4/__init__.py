"""strata plugin for RX 9060 XT, RX 9070 / 9070 XT and Radeon AI PRO R9700."""

from strata_core.api import NATIVE_PACKS, ArchPlugin, Rule

LINUX = ("linux",)
SPEED = "(AMD_HIP.md, Speed switches)"
DECODE = "(AMD_HIP.md, RDNA4: Decode)"


class RDNA4(ArchPlugin):
    """Wave size: AMD_HIP.md "Supported cards" and "RDNA4 (gfx1201)"; the targets are
    the build's (pyproject.toml)."""

    strata_api_version = 2
    wave_size = 32
    # fmt: off
    rules = (
        Rule("STRATA_HIP_WMMA", "1", f"gfx12 Linux: on with int8 KV {SPEED}", os=LINUX,
             kv=("int8",)),
        Rule("STRATA_PF_FUSED", "1", f"gfx12 Linux: on for IQ3_S, IQ3_XXS and Q2_0 {SPEED}",
             os=LINUX, packs=("IQ3_S", "IQ3_XXS", "Q2_0")),
        Rule("STRATA_SCORES_THREAD", "1", f"gfx12: on {SPEED}"),
        Rule("STRATA_HC_Q8", "1", f"gfx12: on {SPEED}"),
        Rule("STRATA_HIP_QUEUE_PRIME", "1", f"gfx1200, gfx1201, Linux: on {SPEED}", os=LINUX),
        Rule("--pcie-frac", "0.55", f"STRATA_PCIE_FRAC_DEFAULT=old restores 0.55 {DECODE}",
             packs=NATIVE_PACKS, given={"STRATA_PCIE_FRAC_DEFAULT": "old"}),
        Rule("--pcie-frac", "0.15", f"gfx12 native packs start at 0.15 {DECODE}",
             packs=NATIVE_PACKS),
    )
    # fmt: on


plugin = RDNA4()
