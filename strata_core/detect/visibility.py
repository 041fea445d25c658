"""What the ROCm runtime and the CUDA driver do with their visibility and override variables,
as pure functions.

ROCR_VISIBLE_DEVICES filters (and orders) the GPUs in KFD order, by index or ``GPU-<uuid>``;
then HIP_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES) filters the result. In each, an empty
value or ``-1`` leaves no device and the first invalid token ends the list. HIP device
numbers are positions after both filters. HSA_OVERRIDE_GFX_VERSION_<node> and then
HSA_OVERRIDE_GFX_VERSION replace the target the runtime loads code for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import attrs

from ..digits import is_digits

RUNTIME_VARIABLES = frozenset(
    {
        "ROCR_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
        "CUDA_VISIBLE_DEVICES",
        "HSA_OVERRIDE_GFX_VERSION",
    }
)
OVERRIDE = "HSA_OVERRIDE_GFX_VERSION"


def is_runtime_variable(name: str) -> bool:
    return name in RUNTIME_VARIABLES or name.startswith(OVERRIDE + "_")


@attrs.frozen
class Visibility:
    """``order``: positions (into the input list) of the visible GPUs, in HIP order;
    ``hidden``: position -> the variable that hid it."""

    order: tuple[int, ...]
    hidden: Mapping[int, str]


def _select(value: str, candidates: Sequence[int], uuids: Sequence[str | None]) -> list[int]:
    value = value.strip()
    if value in ("", "-1"):
        return []
    chosen: list[int] = []
    for token in (t.strip() for t in value.split(",")):
        if token.upper().startswith("GPU-"):
            wanted = token[4:].lower()
            match = [c for c in candidates if uuids[c] is not None and uuids[c] == wanted]
            if not match:
                break
            position = match[0]
        elif is_digits(token) and int(token) < len(candidates):
            position = candidates[int(token)]
        else:
            break
        if position not in chosen:
            chosen.append(position)
    return chosen


def visible_devices(uuids: Sequence[str | None], env: Mapping[str, str]) -> Visibility:
    """Apply the runtime's visibility variables to GPUs given by their unique ids in KFD order."""
    order = list(range(len(uuids)))
    hidden: dict[int, str] = {}
    hip_key = "HIP_VISIBLE_DEVICES" if "HIP_VISIBLE_DEVICES" in env else "CUDA_VISIBLE_DEVICES"
    for key in ("ROCR_VISIBLE_DEVICES", hip_key):
        if key not in env:
            continue
        kept = _select(env[key], order, uuids)
        still = set(kept)
        for position in order:
            if position not in still:
                hidden[position] = f"{key}={env[key]}"
        order = kept
    return Visibility(tuple(order), hidden)


_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def parse_override(value: str) -> str:
    """``11.0.0`` -> ``gfx1100``, ``9.0.6`` -> ``gfx906``, ``10.3.0`` -> ``gfx1030``."""
    match = _VERSION.match(value.strip())
    if not match:
        raise ValueError(f"expected MAJOR.MINOR.STEPPING, got {value!r}")
    major, minor, stepping = (int(g) for g in match.groups())
    if major == 0 or minor > 0xF or stepping > 0xF:
        raise ValueError(f"{value!r} names no gfx target (minor and stepping go up to 15)")
    return f"gfx{major}{minor:x}{stepping:x}"


def override_for(node_id: int | None, env: Mapping[str, str]) -> tuple[str, str] | None:
    """The (variable, raw value) that overrides this KFD node's target, if any.

    The per-node variable wins over the global one; an empty value counts as unset.
    """
    keys = ([f"{OVERRIDE}_{node_id}"] if node_id is not None else []) + [OVERRIDE]
    for key in keys:
        if env.get(key, "").strip():
            return key, env[key]
    return None


@attrs.frozen
class CudaVisibility:
    """``order``: (card position, MIG device UUID or None) of each CUDA device, by CUDA
    ordinal; ``hidden``: position -> why the card is not among them."""

    order: tuple[tuple[int, str | None], ...]
    hidden: Mapping[int, str]


def _leading_number(token: str) -> int:
    """The number a token starts with, as the driver reads it (strtoul: ``1gpu2`` is 1); -1
    for none or a negative one."""
    digits = re.match(r"\+?(\d+)", token)
    return int(digits.group(1)) if digits else -1


def _by_prefix(token: str, ids: Sequence[str | None]) -> int:
    """The position of the one id that starts with ``token``; -1 for none or several."""
    found = [n for n, i in enumerate(ids) if i is not None and i.lower().startswith(token)]
    return found[0] if len(found) == 1 else -1


def cuda_visible_devices(
    uuids: Sequence[str | None], migs: Sequence[Sequence[str]], env: Mapping[str, str]
) -> CudaVisibility:
    """Apply CUDA_VISIBLE_DEVICES to the cards in NVML order (nvidia-smi's), given their UUIDs
    and their MIG devices' UUIDs, as the CUDA driver applies it (CUDA Programming Guide,
    "CUDA Environment Variables"; PyTorch's _parse_visible_devices mirrors it): indices,
    ``GPU-`` UUIDs or unique prefixes of them, or ``MIG-`` UUIDs, as the first entry says;
    the first invalid entry (negative, out of range, unknown or ambiguous, or of another
    kind) ends the list, and a card named twice leaves none. A card lists one MIG device."""
    every = tuple((n, None) for n in range(len(uuids)))
    key = "CUDA_VISIBLE_DEVICES"
    if key not in env:
        return CudaVisibility(every, {})
    value = env[key].strip()
    tokens = [t.strip() for t in value.split(",")] if value else []
    kind = "GPU-" if value.startswith("GPU-") else "MIG-" if value.startswith("MIG-") else ""
    mig_owner = [(card, m) for card, found in enumerate(migs) for m in found]
    chosen: list[tuple[int, str | None]] = []
    for token in tokens:
        mig = None
        if kind == "GPU-":
            card = _by_prefix(token.lower(), uuids) if token.startswith(kind) else -1
        elif kind == "MIG-":
            at = _by_prefix(token.lower(), [m for _, m in mig_owner])
            card, mig = mig_owner[at] if token.startswith(kind) and at >= 0 else (-1, None)
        else:
            card = _leading_number(token)
            card = card if card < len(uuids) else -1
        if card < 0:
            break
        if (card, mig) in chosen:
            chosen = []
            break
        if all(c != card for c, _ in chosen):
            chosen.append((card, mig))
    shown = {card for card, _ in chosen}
    hidden = {n: f"{key}={env[key]}" for n in range(len(uuids)) if n not in shown}
    return CudaVisibility(tuple(chosen), hidden)
