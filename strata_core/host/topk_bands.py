"""The host backend's own top-k bands: from which k and how many cells its wide kernel beats
its register kernel (a heap), per instruction set, as bench/host_topk_bands.py measured them.
The page's bands (kernels.topk_choice) are what the engine's GPU kernels run; the host's are
its own."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ..api.kernels import TOPK_OPS, topk_switched
from ..api.records import KernelChoice


@attrs.frozen
class HostTopkBand:
    """On ``isa`` the wide kernel runs from ``wide_from_k`` kept cells and ``wide_from_cells``
    cells (below that the register kernel); ``measured`` says where the edges were measured."""

    isa: str
    wide_from_k: int
    wide_from_cells: int
    measured: str


#: From k 256 the vector scans make the wide kernel's two passes cheaper than the register
#: kernel's heap inserts at every measured size; below it the register kernel's one pass wins
#: (2 threads, medians: an Intel Xeon with AVX-512, and an AMD EPYC Zen 3 with AVX2, where
#: the two agree). In portable code the register kernel wins until k is large.
HOST_TOPK_BANDS = {
    band.isa: band
    for band in (
        HostTopkBand("baseline", 1024, 16384, "Intel Xeon and AMD EPYC Zen 3"),
        HostTopkBand("avx2", 256, 4096, "Intel Xeon and AMD EPYC Zen 3"),
        HostTopkBand("avxvnni", 256, 4096, "Intel Xeon"),
        HostTopkBand("avx512vnni", 256, 4096, "Intel Xeon"),
    )
}


def host_topk_choice(
    switches: Mapping[str, str | None], isa: str, cells: int, kept: int, prompt_read: bool
) -> KernelChoice:
    """The host's top-k: a switch the user set as the engine reads it (topk_switched), else
    the host's band."""
    switched = topk_switched(switches, cells, prompt_read)
    if switched is not None:
        return switched
    op = TOPK_OPS[prompt_read]
    band = HOST_TOPK_BANDS[isa]
    wide = kept >= band.wide_from_k and cells >= band.wide_from_cells
    edge = f"the wide kernel from {band.wide_from_cells} cells" + (
        f" and k {band.wide_from_k}" if band.wide_from_k > 1 else ""
    )
    return KernelChoice(
        op,
        "wide" if wide else "register",
        f"{cells} cells, k {kept}: the host's own band on {isa} is {edge} "
        f"(measured on {band.measured}; the page's bands are the GPU's)",
    )


def host_topk_choices(
    switches: Mapping[str, str | None], isa: str, cells: int, kept: int
) -> tuple[KernelChoice, ...]:
    """The host's top-k for a decode step and for a prompt read."""
    return tuple(
        host_topk_choice(switches, isa, cells, kept, prompt_read) for prompt_read in TOPK_OPS
    )
