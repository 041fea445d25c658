"""What the run context reads from the machine (its vocabulary is strata_core.api.vocabulary's)."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import bounded
from ..answer_cache import Recorder

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")



def this_os() -> str:
    return "windows" if sys.platform.startswith(("win", "cygwin")) else "linux"


def ram_bytes(recorder: Recorder, meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """MemTotal, or None where /proc/meminfo is missing or unreadable. MemTotal stays
    the same until the next boot, which is what a cached answer is checked against."""
    recorder.is_file(BOOT_ID)
    try:
        text = bounded.read_text(meminfo, bounded.SYSTEM_FILE)
        for line in text.splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):  # UnicodeDecodeError is a ValueError
        return None
    return None
