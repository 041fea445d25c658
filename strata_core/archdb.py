"""Facts about every AMD GPU target that the engine's HIP backend page (AMD_HIP.md) names, as
data: archdb.toml, keyed by target, each row with named fields and the place on the page it
comes from, read into :class:`Arch` records (a row with an unknown, missing or mistyped field
is refused)."""

from __future__ import annotations

import enum
import tomllib
from collections.abc import Iterable
from pathlib import Path

import attrs

from . import bounded
from .digits import is_digits

DATA = Path(__file__).with_name("archdb.toml")
HIPBLASLT, ROCBLAS = "hipBLASLt", "rocBLAS"
#: NVIDIA targets are compute capabilities: sm_90
NVIDIA_PREFIX = "sm_"


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


_of = attrs.validators.instance_of


# Converters written in Python: attrs reads a converter's signature, and a builtin's (tuple, an
# Enum's) is parsed from text with the tokenizer, whose pattern costs milliseconds to compile.
def _tuple(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


def _status(value: str | SupportStatus) -> SupportStatus:
    return SupportStatus(value)


@attrs.frozen
class Arch:
    """One target's row; archdb.toml's header says what each field means."""

    target: str = attrs.field(validator=_of(str))
    family: str = attrs.field(validator=_of(str))
    cards: tuple[str, ...] = attrs.field(
        converter=_tuple, validator=attrs.validators.deep_iterable(_of(str))
    )
    wave_size: int = attrs.field(validator=attrs.validators.in_((32, 64)))
    matrix_cores: bool = attrs.field(validator=_of(bool))
    int8_dot: str = attrs.field(validator=_of(str))
    integrated_only: bool = attrs.field(validator=_of(bool))
    status: SupportStatus = attrs.field(converter=_status)
    page: str = attrs.field(validator=_of(str))
    table_library: str | None = attrs.field(
        default=None, validator=attrs.validators.in_((HIPBLASLT, ROCBLAS, None))
    )
    wmma_prompt_gemm: bool = attrs.field(default=False, validator=_of(bool))
    portable_kernels: bool = attrs.field(default=False, validator=_of(bool))
    note: str = attrs.field(default="", validator=_of(str))
    wave32_refusal: str = attrs.field(default="", validator=_of(str))

    @property
    def matrix_core_kernels(self) -> bool:
        """Whether the engine's build for this target runs kernels on the matrix cores."""
        return self.matrix_cores and not self.portable_kernels


def load(path: Path = DATA) -> dict[str, Arch]:
    """Every row of the database at ``path``, by target; a row with an unknown or missing
    field is a TypeError, a mistyped value a TypeError or ValueError (attrs checks them, so
    that reading the database needs no cattrs)."""
    rows = tomllib.loads(bounded.read_text(path, bounded.ARCH_DATABASE))
    return {target: Arch(target=target, **row) for target, row in rows.items()}


ARCHS: dict[str, Arch] = load()

#: The extras of the `strata` distribution: the plugin distribution each brings and the
#: targets that plugin runs (AMD_HIP.md "Supported cards"; docs/design.md "Layout").
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "rdna4": ("strata-hip-rdna4", ("gfx1200", "gfx1201")),
    "rdna3": ("strata-hip-rdna3", ("gfx1100", "gfx1101", "gfx1102")),
    "rdna2": ("strata-hip-rdna2", ("gfx1030", "gfx1031")),
    "gfx906": ("strata-gfx906", ("gfx906",)),
    "igpu": ("strata-igpu", ("gfx1103", "gfx1150", "gfx1151", "gfx1152")),
    "cuda": ("strata-cuda", ("sm_80", "sm_86", "sm_89", "sm_90")),
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


def compute_capability(target: str) -> int | None:
    """sm_90 -> 90; None for a target that names no NVIDIA compute capability."""
    digits = target.removeprefix(NVIDIA_PREFIX)
    return int(digits) if target.startswith(NVIDIA_PREFIX) and is_digits(digits) else None


def newest_ptx_for(targets: Iterable[str], target: str) -> str | None:
    """Of NVIDIA ``targets``, the newest at or below ``target``'s compute capability, whose PTX
    the driver compiles for the card; None when there is none."""
    capability = compute_capability(target)
    older = [
        (cc, t)
        for t in targets
        if (cc := compute_capability(t)) is not None and capability is not None and cc <= capability
    ]
    return max(older)[1] if older else None


def family_of(target: str) -> str:
    """The family name of a target; a target the database lacks says so with its generation.
    An NVIDIA target (sm_90) is named by its compute capability."""
    arch = lookup(target)
    if arch is not None:
        return arch.family
    capability = compute_capability(target)
    if capability is not None:
        return f"NVIDIA compute capability {capability // 10}.{capability % 10}"
    if target.startswith(NVIDIA_PREFIX):
        return "NVIDIA, compute capability unknown"
    return f"unknown gfx{target.removeprefix('gfx')[:-2]} family"
