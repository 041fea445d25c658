"""The run context's vocabulary (OS, KV types, pack formats) and what is read from the machine."""

from __future__ import annotations

import sys
from pathlib import Path

from ..answer_cache import Recorder

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")

OS_NAMES = ("linux", "windows")
KV_TYPES = ("int8", "f16", "bf16")
#: The engine's own packs (AMD_HIP.md: "native IQ packs"), then the GGUF formats.
NATIVE_PACKS = ("IQ3_S", "IQ3_XXS", "Q2_0", "IQ2_XS", "IQ2_S", "IQ1_M", "IQ4_XS", "UD-IQ4_XS")
GGUF_PACKS = ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_0", "Q5_1")
PACKS = NATIVE_PACKS + GGUF_PACKS
#: the picture readers (strata_core.plan.pictures)
READERS = ("gpu", "cpu")


def this_os() -> str:
    return "windows" if sys.platform.startswith(("win", "cygwin")) else "linux"


def ram_bytes(recorder: Recorder, meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """MemTotal, or None where /proc/meminfo is missing or unreadable. MemTotal stays
    the same until the next boot, which is what a cached answer is checked against."""
    recorder.is_file(BOOT_ID)
    try:
        with open(meminfo) as handle:
            text = handle.read()
        for line in text.splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
