"""NVML's answer about each card, checked as the KFD walker checks sysfs: a fact NVML refused
or gave in a form no card has is left out, and said in one line that names the card by the
one thing NVML always gives, its index. A card whose PCI address is unknown is matched to the
NVIDIA PCI function that no other card is at, so that it stays one card."""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from ..people import counted
from .kfd import MAX_MEMORY_BYTES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

#: what NVML is asked, in the words a user reads, in the order they are said
FACTS = {
    "handle": "its handle",
    "name": "name",
    "uuid": "UUID",
    "pci": "PCI address",
    "memory": "memory size",
    "capability": "compute capability",
}
PCI_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


@attrs.define
class CheckedCard:
    """The facts of the card at ``position`` in NVML's list that passed, and what did not."""

    position: int
    name: str | None = None
    uuid: str | None = None
    pci: str | None = None
    memory: int | None = None
    target: str | None = None
    migs: list[dict[str, Any]] = attrs.Factory(list)
    problems: list[str] = attrs.Factory(list)


def check_card(card: Any, position: int) -> CheckedCard:
    """The facts of one card of NVML's answer that a card can have."""
    checked = CheckedCard(position)
    if not isinstance(card, dict):
        checked.problems.append("not described")
        return checked
    refused = card.get("refused")
    if not isinstance(refused, dict):
        refused = {}
    by_error: dict[str, list[str]] = {}
    for fact, words in FACTS.items():
        if fact in refused:
            by_error.setdefault(str(refused[fact]), []).append(words)
    for error, facts in by_error.items():
        checked.problems.append(f"{_listed(facts)} refused ({error})")
    checked.name = _text(card, "name", checked.problems)
    checked.uuid = _text(card, "uuid", checked.problems)
    pci = _text(card, "pci", checked.problems)
    if pci is not None and not PCI_ADDRESS.fullmatch(pci):
        checked.problems.append(f"PCI address {pci[:40]!r} is not domain:bus:device.function")
        pci = None
    checked.pci = pci
    checked.memory = memory_size(card.get("total_mem"), checked.problems)
    checked.target = _target(card.get("capability"), checked.problems)
    migs = card.get("mig")
    checked.migs = [m for m in migs if _is_mig(m)] if isinstance(migs, list) else []
    return checked


def memory_size(value: Any, problems: list[str]) -> int | None:
    """A byte count up to 1 PiB (the KFD reader's cap), else None and a problem."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_MEMORY_BYTES:
        problems.append(f"{value!r:.40} bytes of memory; expected up to 1 PiB")
        return None
    return value


def _text(card: dict[str, Any], fact: str, problems: list[str]) -> str | None:
    value = card.get(fact)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{FACTS[fact]} {value!r:.40} is no text")
        return None
    return value


def _target(value: Any, problems: list[str]) -> str | None:
    """``sm_90`` for compute capability 9.0; None and a problem for a pair no card has."""
    if value is None:
        return None
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and 1 <= value[0] <= 99
        and 0 <= value[1] <= 9
    ):
        return f"sm_{value[0]}{value[1]}"
    problems.append(f"compute capability {value!r:.40} is no MAJOR.MINOR of a card")
    return None


def _is_mig(mig: Any) -> bool:
    return isinstance(mig, dict) and isinstance(mig.get("uuid"), str)


def _listed(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def place_unaddressed(cards: Sequence[CheckedCard], functions: Sequence[str]) -> None:
    """Give the cards NVML gave no PCI address the NVIDIA PCI functions (``functions``, from
    sysfs) that no other card is at, where there are as many of each: one each, in order
    (NVML numbers cards in PCI order, as nvidia-smi shows them). Each such card's problems
    say where it was placed, or that it could not be."""
    claimed = {card.pci for card in cards if card.pci}
    free = sorted(pci for pci in dict.fromkeys(functions) if pci not in claimed)
    unaddressed = [card for card in cards if card.pci is None]
    if len(unaddressed) == len(free):
        for card, pci in zip(unaddressed, free, strict=True):
            card.pci = pci
            card.problems.append(f"taken to be the NVIDIA card at {pci}")
        return
    for card in unaddressed:
        card.problems.append(
            f"known by its index only ({counted(len(unaddressed), 'card')} without a PCI "
            f"address, {counted(len(free), 'NVIDIA PCI function')} without a card)"
        )
