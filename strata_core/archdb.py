"""Facts about every AMD GPU target that reference/AMD_HIP.md names, as data.

Each row mirrors one card line of the page's "Supported cards" table (or the prose that
names the target) and the instruction facts of reference/notes-detection.md section 6.
"""

from __future__ import annotations

import enum

import attrs


class SupportStatus(enum.Enum):
    """The status column of AMD_HIP.md "Supported cards", plus the prose-only targets."""

    MAINTAINER_TESTED = "maintainer-tested"
    VALIDATED_BY_OWNER = "validated by its owner"
    REPORTED_WORKING = "reported working, not validated"
    PACKAGE_NOT_TESTED = "has a package, not tested on a real card"
    SOURCE_BUILD_COMMUNITY = "source build, community-tested"
    OPT_IN_BUILD = "opt-in build"
    NAMED_NOT_SUPPORTED = "named, not supported"
    BUILDS_BY_HAND = "builds by hand"


@attrs.frozen
class Arch:
    target: str
    family: str
    cards: tuple[str, ...]
    wave_size: int
    wmma: bool
    int8_dot: str
    #: the library whose tuning table serves the prompt GEMMs (AMD_HIP.md "Tuning table":
    #: "On gfx103x the same role falls to a rocBLAS table"; gfx906: "hipBLASLt is not used")
    table_library: str | None
    integrated_only: bool
    status: SupportStatus
    note: str = ""


S = SupportStatus
HIPBLASLT, ROCBLAS = "hipBLASLt", "rocBLAS"

# target, family, cards, wave, WMMA, int8 dot4 instruction, table library, integrated only,
# status, note
# fmt: off
_ROWS = (
    ("gfx906", "GCN5 (Vega20)", ("Instinct MI50", "Instinct MI60", "Radeon VII"), 64, False,
     "v_dot4_i32_i8", None, False, S.SOURCE_BUILD_COMMUNITY, "wave64 compat build"),
    ("gfx1012", "RDNA1", ("RX 5500", "RX 5500 XT"), 32, False,
     "v_dot4_i32_i8", None, False, S.BUILDS_BY_HAND, "OLDER_GPUS.md"),
    ("gfx1030", "RDNA2", ("RX 6800", "RX 6800 XT", "RX 6900 XT", "RX 6950 XT"), 32, False,
     "v_dot4_i32_i8", ROCBLAS, False, S.PACKAGE_NOT_TESTED, ""),
    ("gfx1031", "RDNA2", ("RX 6700 XT",), 32, False,
     "v_dot4_i32_i8", ROCBLAS, False, S.PACKAGE_NOT_TESTED, ""),
    ("gfx1032", "RDNA2", ("RX 6600", "RX 6600 XT"), 32, False,
     "v_dot4_i32_i8", ROCBLAS, False, S.NAMED_NOT_SUPPORTED, "unvalidated; helper card only"),
    ("gfx1100", "RDNA3", ("RX 7900 XT", "RX 7900 XTX"), 32, True,
     "v_dot4_i32_iu8", HIPBLASLT, False, S.MAINTAINER_TESTED, ""),
    ("gfx1101", "RDNA3", ("RX 7800 XT", "RX 7700 XT"), 32, True,
     "v_dot4_i32_iu8", HIPBLASLT, False, S.VALIDATED_BY_OWNER, ""),
    ("gfx1102", "RDNA3", ("RX 7600 XT",), 32, True,
     "v_dot4_i32_iu8", HIPBLASLT, False, S.REPORTED_WORKING, ""),
    ("gfx1103", "RDNA3", ("Radeon 780M", "Radeon 760M"), 32, True,
     "v_dot4_i32_iu8", HIPBLASLT, True, S.OPT_IN_BUILD, "Linux only: RADEON_780M.md"),
    ("gfx1150", "RDNA3.5", ("Radeon 890M", "Radeon 880M"), 32, True,
     "v_dot4_i32_iu8", HIPBLASLT, True, S.NAMED_NOT_SUPPORTED,
     "Strix Point; setup does not install it"),
    ("gfx1151", "RDNA3.5", ("Radeon 8060S (Ryzen AI Max, Strix Halo)",), 32, True,
     "v_dot4_i32_iu8", HIPBLASLT, True, S.REPORTED_WORKING, "STRIX_HALO.md"),
    ("gfx1152", "RDNA3.5", ("Radeon 860M", "Radeon 840M"), 32, True,
     "v_dot4_i32_iu8", HIPBLASLT, True, S.NAMED_NOT_SUPPORTED,
     "Krackan; setup does not install it"),
    ("gfx1200", "RDNA4", ("RX 9060 XT",), 32, True,
     "v_dot4_i32_iu8", HIPBLASLT, False, S.VALIDATED_BY_OWNER, ""),
    ("gfx1201", "RDNA4", ("RX 9070", "RX 9070 XT", "Radeon AI PRO R9700"), 32, True,
     "v_dot4_i32_iu8", HIPBLASLT, False, S.MAINTAINER_TESTED, ""),
)
# fmt: on

ARCHS: dict[str, Arch] = {row[0]: Arch(*row) for row in _ROWS}

#: The extras of the `strata` distribution: the plugin distribution each brings and the
#: targets that plugin runs (AMD_HIP.md "Supported cards"; DESIGN.md "Layout").
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "rdna4": ("strata-hip-rdna4", ("gfx1200", "gfx1201")),
    "rdna3": ("strata-hip-rdna3", ("gfx1100", "gfx1101", "gfx1102")),
    "rdna2": ("strata-hip-rdna2", ("gfx1030", "gfx1031")),
    "gfx906": ("strata-gfx906", ("gfx906",)),
    "igpu": ("strata-igpu", ("gfx1103", "gfx1150", "gfx1151", "gfx1152")),
}


def extra_for(target: str) -> tuple[str, str] | None:
    """(extra, distribution) of the in-tree plugin that runs a target."""
    for extra, (distribution, targets) in EXTRAS.items():
        if target in targets:
            return extra, distribution
    return None


def lookup(target: str) -> Arch | None:
    """The row for a gfx target; target-ID suffixes such as ``:sramecc+`` are ignored."""
    return ARCHS.get(target.split(":", 1)[0])


def family_of(target: str) -> str:
    """The family name of a target; a target the database lacks says so with its generation."""
    arch = lookup(target)
    if arch is not None:
        return arch.family
    return f"unknown gfx{target.removeprefix('gfx')[:-2]} family"
