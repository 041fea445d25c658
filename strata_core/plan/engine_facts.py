"""What the engine's own arguments say of a run: those after `run --` (the user's, which the
engine runs with) and those in the run config's ``args``. The page's argument list tells a
flag from its value; the arguments that decide a plan (the KV cache and its streaming, the
cards, the backend) become facts with where they came from, and every argument passes on to
the engine untouched."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

#: AMD_HIP.md's engine arguments that take a value ("--kv int8", "--layer-split 27", ...)
TAKES_VALUE = frozenset(
    {
        "--adapt-every", "--backend", "--context", "--expert-cache", "--expert-profile",
        "--gpu", "--gpu-roles", "--kv", "--kv-resident", "--layer-split", "--max-context",
        "--mtp", "--pcie-frac", "--pipeline-windows", "--ple-gguf", "--ple-io",
        "--pool-workers", "--port", "--prefill", "--spec", "--spec-min-p",
        "--vram-reserve-mib",
    }
)  # fmt: skip
#: the page's arguments that a plan is for, and what each is a fact of
FACTS = {
    "--kv": "kv",
    "--kv-resident": "kv_streaming",
    "--gpu": "cards",
    "--gpu-roles": "cards",
    "--backend": "backend",
}
#: where an argument came from, as a plan's facts say it
ENGINE, CONFIG = "engine argument", "config"


@attrs.frozen
class EngineFact:
    """One argument of the page's that a plan is for: its value ("" for a flag), ``source``
    (ENGINE or CONFIG) and where it was read, in the words of a message."""

    flag: str
    value: str
    source: str
    where: str


def arguments(args: Sequence[str]) -> dict[str, str]:
    """Each flag of ``args`` with its value (``--f v`` or ``--f=v`` for a flag of TAKES_VALUE,
    "" for one that takes none); the last one wins, as the engine reads them."""
    found: dict[str, str] = {}
    at = 0
    while at < len(args):
        flag, eq, value = args[at].partition("=")
        at += 1
        if not flag.startswith("--"):
            continue
        if not eq and flag in TAKES_VALUE and at < len(args):
            value, at = args[at], at + 1
        found[flag] = value
    return found


def read(
    engine_args: Sequence[str], config_args: Sequence[str], config_name: str
) -> dict[str, EngineFact]:
    """The page's arguments that a plan is for, from the run config's ``args`` and then the
    engine's own after `run --`, which win (the engine runs with them)."""
    facts: dict[str, EngineFact] = {}
    for args, source, where in (
        (config_args, CONFIG, f"in the args of {config_name}"),
        (engine_args, ENGINE, "after run --"),
    ):
        for flag, value in arguments(args).items():
            if flag in FACTS:
                said = f"{flag} {value}".rstrip()
                facts[flag] = EngineFact(flag, value, source, f"{said} {where}")
    return facts
