"""Which cards a run uses. A choice the user made is never overridden, only checked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from ..api.records import Device
from ..digits import is_digits
from ..errors import StrataError
from ..gpu.backends import BACKENDS, CHOICE_ORDER, numbering_of, of_vendor
from .claims import Assignment

ROLES = ("main", "helper")


@attrs.frozen
class DeviceChoice:
    """What the user asked for. ``gpus`` is a tuple of HIP numbers or ``"all"``; ``key`` is
    the run config's key it came from (None: the command line's options)."""

    gpu: int | None = None
    gpus: tuple[int, ...] | str | None = None
    roles: Mapping[int, str] = attrs.field(factory=dict)
    source: str = "command line"
    key: str | None = None

    def said(self, option: str) -> str:
        """Where the choice came from, by the name the user gave it: ``--gpus from command
        line``, ``gpu from strata.toml``."""
        return f"{self.key or option} from {self.source}"


@attrs.frozen
class Selection:
    """The chosen HIP numbers in run order: with several cards the last one is the main card."""

    indices: tuple[int, ...]
    roles: Mapping[int, str]
    reason: str
    notes: tuple[str, ...] = ()
    #: whose numbers ``indices`` are: ``amd`` (HIP numbers) or ``nvidia`` (CUDA ordinals)
    vendor: str = "amd"

    def selects(self, device: Device) -> bool:
        return device.vendor == self.vendor and device.index in self.indices


def parse_gpus(text: str) -> tuple[int, ...] | str:
    if text.strip() == "all":
        return "all"
    try:
        values = tuple(int(t) for t in text.split(","))
    except ValueError:
        raise StrataError(f"--gpus {text}: expected HIP numbers such as 1,0, or all") from None
    if len(set(values)) != len(values) or any(v < 0 for v in values):
        raise StrataError(f"--gpus {text}: each HIP number once, none negative")
    return values


def roles_order(roles: Mapping[int, str]) -> tuple[int, ...]:
    """The cards that roles name, in run order: the helpers, then the main card."""
    return (
        *(i for i, r in roles.items() if r == "helper"),
        *(i for i, r in roles.items() if r == "main"),
    )


def parse_roles(text: str) -> dict[int, str]:
    roles: dict[int, str] = {}
    for item in text.split(","):
        index, _, role = item.partition("=")
        if not is_digits(index.strip()) or role.strip() not in ROLES:
            raise StrataError(f"--gpu-roles {text}: expected N=main or N=helper, got {item!r}")
        if int(index) in roles:
            raise StrataError(f"--gpu-roles {text}: device {int(index)} is named twice")
        roles[int(index)] = role.strip()
    if list(roles.values()).count("main") != 1:
        raise StrataError(f"--gpu-roles {text}: name exactly one main card")
    return roles


@attrs.frozen
class NamedBackend:
    """The backend the user named (the run config's "backend", the engine's --backend), and
    where, in the words of a message."""

    name: str
    where: str
    #: ``config`` or ``engine argument``, as a plan's facts say it
    source: str


def backend_vendor(assignments: Sequence[Assignment], named: NamedBackend | None = None) -> str:
    """The vendor of the backend the user named, else ``nvidia`` where a visible NVIDIA card
    that a plugin runs is present, else ``amd`` (AMD_HIP.md: "Setup picks --backend hip by
    itself on a PC with no NVIDIA card Strata can use. ... mixed AMD/NVIDIA runs are not
    supported"). StrataError where the named backend is none strata knows, or no visible card
    of its vendor is one a plugin runs."""
    if named is not None:
        vendor = next((b.vendor for b in BACKENDS.values() if b.name == named.name), None)
        if vendor is None:
            raise StrataError(
                f"backend {named.name} ({named.where}): strata runs the "
                f"{' or the '.join(BACKENDS)} backend"
            )
        if not any(a.usable and a.device.vendor == vendor for a in assignments):
            raise StrataError(
                f"backend {named.name} ({named.where}): no visible card of this PC is one it "
                "runs with an installed plugin"
            )
        return vendor
    for name in CHOICE_ORDER:
        if any(a.usable and a.device.vendor == BACKENDS[name].vendor for a in assignments):
            return BACKENDS[name].vendor
    return BACKENDS[CHOICE_ORDER[-1]].vendor


def choose_backend(
    assignments: Sequence[Assignment],
    choice: DeviceChoice,
    os_name: str = "linux",
    named: NamedBackend | None = None,
) -> Selection:
    """The cards of the backend's vendor that a run uses; the other vendor's usable cards are
    named in the notes, unused. On Linux, chosen cards of two families need a system ROCm 7
    (AMD_HIP.md, "Install with setup": "Cards of two families (for example gfx1100 and
    gfx1201) need a system ROCm 7, because AMD's wheels hold one family"); on Windows the
    engine package carries its own runtime, and whether it covers them is the package's
    question (plan/packages.split_refusal). A backend the user ``named`` is the backend, and
    the cards count in its numbers."""
    vendor = backend_vendor(assignments, named)
    numbering = numbering_of(vendor)
    selection = choose([a for a in assignments if a.device.vendor == vendor], choice, numbering)
    unused = tuple(
        f"{a.device.name} ({a.device.gfx}) is not used: the {numbering} backend runs, and "
        "mixed AMD/NVIDIA runs are not supported"
        for a in assignments
        if a.device.vendor != vendor and a.usable
    )
    passed_over = tuple(
        f"{numbering_of(a.device.vendor)} {a.device.index} ({a.device.gfx}) passed over: {a.reason}"
        for a in assignments
        if a.device.vendor != vendor and a.device.visible and not a.usable
    )
    families = sorted(
        {
            a.device.family
            for a in assignments
            if a.device.vendor == vendor and a.device.index in selection.indices
        }
    )
    backend = of_vendor(vendor)
    split = backend.linux_family_split if backend else None
    families_note = (
        (f"cards of two families ({', '.join(families)}) need {split}",)
        if split and os_name == "linux" and len(families) > 1
        else ()
    )
    return attrs.evolve(
        selection, notes=selection.notes + families_note + unused + passed_over, vendor=vendor
    )


def choose(
    assignments: Sequence[Assignment], choice: DeviceChoice, numbering: str = "HIP"
) -> Selection:
    """The cards a run uses among ``assignments``, whose numbers are ``numbering``'s."""
    visible = {a.device.index: a for a in assignments if a.device.index is not None}
    usable = {i: a for i, a in visible.items() if a.usable}
    if choice.roles:
        order, said = roles_order(choice.roles), choice.said("--gpu-roles")
        return _explicit(visible, order, dict(choice.roles), said, numbering)
    if choice.gpu is not None:
        return _explicit(visible, (choice.gpu,), {}, choice.said("--gpu"), numbering)
    if choice.gpus == "all":
        discrete = [i for i in usable if not usable[i].device.integrated]
        pool = discrete or list(usable)
        ranked = sorted(pool, key=lambda i: (-(usable[i].device.vram_bytes or 0), i))
        return _finish(
            tuple(ranked),
            {},
            f"every card a plugin runs, most VRAM first ({choice.said('--gpus all')})",
            visible,
            _integrated_skipped(usable, discrete, numbering),
        )
    if isinstance(choice.gpus, tuple) and choice.gpus:
        return _explicit(visible, choice.gpus, {}, choice.said("--gpus"), numbering)
    return _automatic(usable, visible, numbering)


def _automatic(
    usable: Mapping[int, Assignment], visible: Mapping[int, Assignment], numbering: str
) -> Selection:
    passed_over = tuple(
        f"{numbering} {i} ({a.device.gfx}) passed over: {a.reason}"
        for i, a in visible.items()
        if not a.usable
    )
    if not usable:
        return Selection((), {}, "no visible GPU that an installed plugin runs", passed_over)
    discrete = [i for i, a in usable.items() if not a.device.integrated]
    pool = discrete or list(usable)
    best = max(pool, key=lambda i: (usable[i].device.vram_bytes or 0, -i))
    notes = passed_over + _integrated_skipped(usable, discrete, numbering)
    kind = "discrete card" if discrete else "integrated GPU (no discrete card can run)"
    among = f" of the {len(pool)} a plugin runs" if len(pool) > 1 else " a plugin runs"
    unknown = [str(i) for i in pool if usable[i].device.vram_bytes is None]
    if len(pool) == 1:
        reason = f"the only {kind}{among}"
    elif len(unknown) == len(pool):
        reason = f"the first {kind}{among}: none's VRAM is known, so the lowest {numbering} number"
    else:
        reason = f"the {kind} with the most VRAM{among}"
        if unknown:
            reason += f" ({numbering} {', '.join(unknown)}: VRAM unknown)"
    return _finish((best,), {}, reason, visible, notes)


def _integrated_skipped(
    usable: Mapping[int, Assignment], discrete: Sequence[int], numbering: str
) -> tuple[str, ...]:
    """AMD_HIP.md: "Integrated Radeon GPUs are listed as not supported" beside a discrete card."""
    return tuple(
        f"integrated {a.device.name} ({numbering} {i}, {a.device.gfx}) skipped: "
        "a discrete card can run"
        for i, a in usable.items()
        if discrete and a.device.integrated
    )


def _explicit(
    visible: Mapping[int, Assignment],
    order: tuple[int, ...],
    roles: dict[int, str],
    reason: str,
    numbering: str,
) -> Selection:
    missing = [i for i in order if i not in visible]
    if missing:
        known = ", ".join(str(i) for i in sorted(visible)) or "none"
        raise StrataError(
            f"{reason}: no {numbering} device {missing[0]} (visible {numbering} devices: {known})"
        )
    notes = tuple(
        f"{numbering} {i} ({visible[i].device.gfx}) was chosen but {visible[i].reason}"
        for i in order
        if not visible[i].usable
    )
    return _finish(order, roles, reason, visible, notes)


def _finish(
    order: tuple[int, ...],
    roles: dict[int, str],
    reason: str,
    visible: Mapping[int, Assignment],
    notes: tuple[str, ...],
) -> Selection:
    if len(order) > 1 and not roles:
        roles = {i: "helper" for i in order[:-1]} | {order[-1]: "main"}
    return Selection(order, roles, reason, notes)
