"""Which picture reader a run gets (AMD_HIP.md, "Install with setup", Pictures: "CPU reader
under 24 GB of VRAM, GPU reader from 24 GB; --vision gpu / --vision cpu switch it. If the GPU
reader cannot start, the CPU reader is used"), and what the page knows of it on this card."""

from __future__ import annotations

import attrs

from ..api.records import Device

GPU_READER_FROM_BYTES = 24 * 10**9
#: VRAM is said in GiB everywhere, as `devices` says it
GIB = 1 << 30


@attrs.frozen
class PictureReader:
    """``reader`` is ``gpu`` or ``cpu``, None where the main card's VRAM is unknown and the user
    named none; ``notes`` are the page's facts about it on this card and OS."""

    reader: str | None
    reason: str
    notes: tuple[str, ...] = ()


def picture_reader(device: Device, os_name: str, requested: str | None) -> PictureReader:
    """The reader for a run whose main card is ``device``; ``requested`` is the user's
    --vision, never overridden."""
    pictures = device.arch.pictures if device.arch else ""
    if pictures == "not done":
        return PictureReader(
            requested,
            f"pictures (--vision) were not done on {device.gfx} (AMD_HIP.md, {device.gfx})",
        )
    if requested is not None:
        reader, reason = requested, f"--vision {requested}"
    elif device.vram_bytes is None:
        return PictureReader(
            None, "the card's VRAM is unknown: CPU reader under 24 GB, GPU reader from 24 GB"
        )
    else:
        reader = "gpu" if device.vram_bytes >= GPU_READER_FROM_BYTES else "cpu"
        reason = (
            f"{device.vram_bytes / GIB:.1f} GiB of VRAM: CPU reader under 24 GB "
            f"({GPU_READER_FROM_BYTES / GIB:.1f} GiB), GPU reader from 24 GB"
        )
    if reader == "cpu":
        return PictureReader(reader, reason)
    notes = ["the card's reader (strata-vision-hip) keeps about 1.4 GiB of VRAM on the R9700"]
    if pictures == "not run" or os_name == "windows":
        notes.append(
            "the GPU reader has not run on an RDNA3 card (gfx1100-gfx1102) or on Windows with "
            "an AMD card"
        )
    return PictureReader(
        reader, f"{reason}; if the GPU reader cannot start, the CPU reader is used", tuple(notes)
    )
