"""What the core knows of GPU targets without any one architecture's plugin: the page's
catalogue (archdb.toml: the targets AMD_HIP.md names, with their status and the extra that
installs a plugin for them), NVIDIA compute capabilities, and a target's generation from its
name. What a target is comes from its plugin (strata_core.api.arch)."""

from __future__ import annotations

import enum
import functools
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

import attrs

from . import bounded
from .digits import is_digits

DATA = Path(__file__).with_name("archdb.toml")
#: NVIDIA targets are compute capabilities: sm_90
NVIDIA_PREFIX = "sm_"
#: the extra whose plugin runs NVIDIA cards (their PTX covers newer cards through the driver)
NVIDIA_EXTRA = "cuda"

_of = attrs.validators.instance_of


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
    #: the status column names the target's own page (Strix Halo: "STRIX_HALO.md")
    OWN_PAGE = "on its own page"


def _tuple(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


def _status(value: str | SupportStatus) -> SupportStatus:
    return SupportStatus(value)


@attrs.frozen
class PageTarget:
    """One target of the page's catalogue; archdb.toml's header says what each field means."""

    target: str = attrs.field(validator=_of(str))
    family: str = attrs.field(validator=_of(str))
    cards: tuple[str, ...] = attrs.field(
        converter=_tuple, validator=attrs.validators.deep_iterable(_of(str))
    )
    status: SupportStatus = attrs.field(converter=_status)
    page: str = attrs.field(validator=_of(str))
    note: str = attrs.field(default="", validator=_of(str))
    extra: str = attrs.field(default="", validator=_of(str))
    wave32_refusal: str = attrs.field(default="", validator=_of(str))


def load(path: Path = DATA) -> dict[str, PageTarget]:
    """Every row of the catalogue at ``path``, by target; a row with an unknown or missing
    field is a TypeError, a mistyped value a TypeError or ValueError."""
    rows = tomllib.loads(bounded.read_text(path, bounded.ARCH_DATABASE))
    return {target: PageTarget(target=target, **row) for target, row in rows.items()}


PAGE: dict[str, PageTarget] = load()


def base_target(target: str) -> str:
    """gfx906:sramecc+:xnack- -> gfx906 (target-ID features are not part of the target)."""
    return target.split(":", 1)[0]


def page_target(target: str) -> PageTarget | None:
    return PAGE.get(base_target(target))


@functools.cache
def extra_distributions() -> dict[str, str]:
    """strata's extras and the plugin distribution each brings, as strata's own metadata
    says (``Requires-Dist: strata-hip-rdna4==0.1.0; extra == "rdna4"``)."""
    from importlib import metadata

    try:
        requires = metadata.requires("strata") or []
    except metadata.PackageNotFoundError:
        return {}
    found = {}
    for line in requires:
        matched = re.match(r"([A-Za-z0-9_.-]+)[^;]*;\s*extra\s*==\s*['\"]([\w-]+)['\"]\s*$", line)
        if matched and matched[1] != "strata":
            found[matched[2]] = matched[1]
    return found


def extra_for(target: str) -> tuple[str, str] | None:
    """(extra, distribution) of the strata extra that installs a plugin for ``target``: the
    page's catalogue for AMD targets, the cuda extra for NVIDIA ones."""
    page = page_target(target)
    extra = NVIDIA_EXTRA if target.startswith(NVIDIA_PREFIX) else (page.extra if page else "")
    distribution = extra_distributions().get(extra) if extra else None
    return (extra, distribution) if distribution else None


#: the vendors as a message names them
VENDOR_NAMES = {"amd": "AMD", "nvidia": "NVIDIA"}


def vendor_of(target: str) -> str:
    """The vendor whose cards a target names: ``nvidia`` for an NVIDIA compute capability
    (sm_90), ``amd`` otherwise."""
    return "nvidia" if target.startswith(NVIDIA_PREFIX) else "amd"


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


def generation_of(target: str) -> str:
    """The ISA generation a gfx target's name gives: gfx1201 -> gfx12, gfx906 -> gfx9."""
    target = base_target(target)
    digits = target.removeprefix("gfx")
    return f"gfx{digits[:-2]}" if target.startswith("gfx") and len(digits) >= 3 else target
