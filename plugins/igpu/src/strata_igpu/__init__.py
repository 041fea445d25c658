"""strata plugin for integrated Radeon GPUs: 780M / 760M, 890M / 880M, Strix Halo 8060S,
860M / 840M, with the iGPU prompt set (AMD_HIP.md, "Integrated GPUs (mini PCs)")."""

from strata_core.api import ArchPlugin, Default, Defaults, Device, Rule, RunContext, hookimpl

HALO = ("gfx1151",)
PROMPT_SET = (
    "STRATA_HIP_WMMA",
    "STRATA_PF_GEMM",
    "STRATA_PA_FAST",
    "STRATA_SELECT_WMMA",
    "STRATA_HC_UPMIX",
)
#: Where the prompt set is on without being asked for: only the 780M was measured.
PROMPT_SET_DEFAULT = (("gfx1103", "linux"),)


class IntegratedGPU(ArchPlugin):
    """Wave size: AMD_HIP.md "Supported cards" and "Integrated GPUs"; the targets are
    the build's (pyproject.toml)."""

    strata_api_version = 2
    wave_size = 32
    # fmt: off
    rules = (
        Rule("STRATA_HC_Q8", "1", "gfx1151: on (AMD_HIP.md, Strix Halo: 8-bit hyper-connection "
             "weights)", targets=HALO),
        Rule("STRATA_SH_STREAM", "0", "the fork stays off on Windows with KV streaming "
             "(AMD_HIP.md, Switches for shared-expert and draft streams)", targets=HALO,
             os=("windows",), kv_streaming=True),
        Rule("STRATA_SH_STREAM", "1", "on in the gfx1151 table (AMD_HIP.md, Switches for "
             "shared-expert and draft streams)", targets=HALO),
        Rule("STRATA_HIPBLASLT_TABLE", "on", "packaged engines use the table by default only "
             "on Strix Halo (AMD_HIP.md, Tuning tables)", targets=HALO),
    )
    # fmt: on

    @hookimpl
    def strata_switch_defaults(self, device: Device, context: RunContext) -> Defaults:
        defaults = super().strata_switch_defaults(device, context)
        reason = prompt_set_reason(device, context)
        if reason is None:
            return defaults
        names = [n for n in PROMPT_SET if n not in context.given]
        values = tuple(Default(n, "1", f"iGPU prompt set: {reason}", "igpu-set") for n in names)
        line = (
            f"iGPU prompt set: {' '.join(f'{n}=1' for n in names) or 'nothing left to set'}"
            f" ({device.name}, {device.gfx}, {reason})"
        )
        kv_note: tuple[str, ...] = ()
        if "STRATA_HIP_WMMA" in names and context.kv not in (None, "int8"):
            kv_note = (f"STRATA_HIP_WMMA of the iGPU prompt set needs --kv int8, not {context.kv}",)
        return Defaults(defaults.values + values, log=(line,), warnings=kv_note)


def prompt_set_reason(device: Device, context: RunContext) -> str | None:
    """Why the prompt set is on for this device, or None where it is off."""
    if not device.integrated or context.discrete_card_present:
        return None
    if context.given.get("STRATA_IGPU_DEFAULTS") == "0":
        return None
    asked = context.given.get("STRATA_IGPU_PROMPT_SET")
    if asked == "0":
        return None
    if asked == "1":
        return "STRATA_IGPU_PROMPT_SET=1"
    if (device.gfx, context.os) in PROMPT_SET_DEFAULT:
        return f"default on {device.gfx} on {context.os.capitalize()}"
    return None


plugin = IntegratedGPU()
