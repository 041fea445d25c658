"""What a GPU target is, as the plugin that runs it describes it: :class:`ArchRecord`, one per
target, read from the plugin's own ``arch.toml`` (:func:`load_records`) and returned by the
``strata_arch_records`` hook; :class:`Architectures` gives every target its record, the
plugin's or a plain fallback said as such. The core decides from these facts, never from a
target's name."""

from __future__ import annotations

import enum
import functools
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs

from .. import bounded
from ..archdb import (
    NVIDIA_PREFIX,
    SupportStatus,
    base_target,
    compute_capability,
    generation_of,
    page_target,
)

HIPBLASLT, ROCBLAS = "hipBLASLt", "rocBLAS"
#: what the page says of pictures (--vision) on a target: nothing, that they were not done
#: there, or that the GPU reader has not run there
PICTURES = ("", "not done", "not run")


class MatrixCores(enum.Enum):
    """The matrix instructions a target has: none, RDNA's WMMA (gfx11, gfx12) or CDNA's MFMA."""

    NONE = "none"
    WMMA = "WMMA"
    MFMA = "MFMA"


_of = attrs.validators.instance_of


# Converters written in Python: attrs reads a converter's signature, and a builtin's (tuple, an
# Enum's) is parsed from text with the tokenizer, whose pattern costs milliseconds to compile.
def _tuple(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


def _status(value: str | SupportStatus | None) -> SupportStatus | None:
    return None if value is None else SupportStatus(value)


def _matrix_cores(value: str | MatrixCores | None) -> MatrixCores | None:
    return None if value is None else MatrixCores(value)


def pci_key(device_id: int, revision: int | None = None) -> str:
    """How ``names`` keys a card, as libdrm's amdgpu.ids writes it: ``744C``, or ``744C:C8``
    where the revision tells cards of one device id apart."""
    return f"{device_id:04X}" + ("" if revision is None else f":{revision:02X}")


def _names(value: Mapping[str, str]) -> dict[str, str]:
    names = {}
    for key, name in value.items():
        device, _, revision = str(key).partition(":")
        try:
            names[pci_key(int(device, 16), int(revision, 16) if revision else None)] = name
        except ValueError:
            raise ValueError(f"names: {key!r} is not a PCI device id (hex, ':revision')") from None
    return names


@attrs.frozen
class ArchRecord:
    """One GPU target's facts.

    ``family`` and ``generation`` (the ISA generation the page speaks of: ``gfx12``, ``gfx11``,
    ``gfx10``, ``gfx9``); ``wave_size``; ``matrix_cores``; ``int8_dot``, the int8 dot4
    instruction the kernels use; ``lds_kib``, the LDS a workgroup may address;
    ``integrated_only``, the target exists only as an integrated GPU; ``cards``, the cards of
    the target as the page (or the plugin) lists them; ``names``, each card's marketing name by
    PCI device id (and revision where one id has several names, :func:`pci_key`); ``status``
    and ``page``, the page's status and words where the page names the target (None and "" where
    it does not); ``note``, what the status adds; ``table_library``, the library whose tuning
    table serves the prompt GEMMs (None: the page uses none); ``wmma_prompt_gemm``, the engine's
    WMMA prompt GEMM runs here; ``portable_kernels``, the engine builds only its portable kernels
    here, matrix cores unused; ``pictures``, what the page says of pictures there (PICTURES).
    ``described_by`` is the plugin the record came from, set by the
    core ("" for a target no installed plugin describes, whose facts are unknown: None).
    """

    target: str = attrs.field(validator=_of(str))
    family: str = attrs.field(validator=_of(str))
    generation: str = attrs.field(validator=_of(str))
    wave_size: int | None = attrs.field(validator=attrs.validators.in_((32, 64, None)))
    matrix_cores: MatrixCores | None = attrs.field(converter=_matrix_cores)
    int8_dot: str | None = attrs.field(validator=attrs.validators.optional(_of(str)))
    lds_kib: int | None = attrs.field(validator=attrs.validators.optional(_of(int)))
    integrated_only: bool = attrs.field(default=False, validator=_of(bool))
    cards: tuple[str, ...] = attrs.field(
        default=(), converter=_tuple, validator=attrs.validators.deep_iterable(_of(str))
    )
    names: Mapping[str, str] = attrs.field(
        factory=dict,
        hash=False,
        converter=_names,
        validator=attrs.validators.deep_mapping(_of(str), _of(str)),
    )
    status: SupportStatus | None = attrs.field(default=None, converter=_status)
    page: str = attrs.field(default="", validator=_of(str))
    note: str = attrs.field(default="", validator=_of(str))
    table_library: str | None = attrs.field(
        default=None, validator=attrs.validators.in_((HIPBLASLT, ROCBLAS, None))
    )
    wmma_prompt_gemm: bool = attrs.field(default=False, validator=_of(bool))
    portable_kernels: bool = attrs.field(default=False, validator=_of(bool))
    pictures: str = attrs.field(default="", validator=attrs.validators.in_(PICTURES))
    described_by: str = attrs.field(default="", validator=_of(str))

    @property
    def matrix_core_kernels(self) -> bool:
        """Whether the engine's build for this target runs kernels on the matrix cores."""
        return self.matrix_cores not in (None, MatrixCores.NONE) and not self.portable_kernels

    def name_of(self, device_id: int | None, revision: int | None) -> str | None:
        """The marketing name of the card with this PCI device id and revision, if listed."""
        if device_id is None:
            return None
        if revision is not None and (name := self.names.get(pci_key(device_id, revision))):
            return name
        return self.names.get(pci_key(device_id))


def records_from_toml(text: str, where: str) -> tuple[ArchRecord, ...]:
    """The records of an ``arch.toml``: one table per target. A table with an unknown,
    missing or mistyped field raises ValueError naming ``where`` and the target."""
    try:
        rows = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{where}: {exc}") from None
    records = []
    for target, row in rows.items():
        if not isinstance(row, dict):
            raise ValueError(f"{where}: {target} is not a table of facts")
        try:
            records.append(ArchRecord(target=target, **row))
        except (TypeError, ValueError) as exc:  # attrs' validators: the message, then details
            message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else exc
            raise ValueError(f"{where}: [{target}]: {message}") from None
    return tuple(records)


#: every arch.toml this process read: an answer made from their records depends on them as on
#: the plugins' code (the answer cache checks them)
READ_FILES: list[Path] = []


def load_records(path: Path) -> tuple[ArchRecord, ...]:
    """The records of the ``arch.toml`` at ``path`` (a plugin's own file), read bounded."""
    READ_FILES.append(path)
    return records_from_toml(bounded.read_text(path, bounded.ARCH_DATABASE), str(path))


@functools.cache
def fallback(target: str) -> ArchRecord:
    """The record of a target no installed plugin describes: what the page names of it, and
    nothing else (wave size, matrix cores, instructions and LDS unknown)."""
    capability = compute_capability(target)
    if capability is not None:
        family = f"NVIDIA compute capability {capability // 10}.{capability % 10}"
    elif target.startswith(NVIDIA_PREFIX):
        family = "NVIDIA, compute capability unknown"
    elif (page := page_target(target)) is not None:
        return ArchRecord(
            target=page.target,
            family=page.family,
            generation=generation_of(target),
            wave_size=None,
            matrix_cores=None,
            int8_dot=None,
            lds_kib=None,
            cards=page.cards,
            status=page.status,
            page=page.page,
            note=page.note,
        )
    elif target.startswith("gfx"):
        family = f"{generation_of(target)}, described by no installed plugin"
    else:  # a GPU whose architecture nobody reported
        family = "architecture unknown"
    return ArchRecord(
        target=base_target(target),
        family=family,
        generation=generation_of(target),
        wave_size=None,
        matrix_cores=None,
        int8_dot=None,
        lds_kib=None,
    )


@attrs.frozen
class Architectures:
    """Every target's record: the plugins' (``records``, by target), else :func:`fallback`."""

    records: Mapping[str, ArchRecord] = attrs.field(factory=dict)

    def of(self, target: str) -> ArchRecord:
        return self.records.get(base_target(target)) or fallback(target)

    def by_device_id(self, device_id: int) -> ArchRecord | None:
        """The record whose cards' names list this PCI device id (an architecture a kernel's
        KFD did not report), where exactly one does."""
        device = pci_key(device_id)
        found = [
            r for r in self.records.values() if any(k.split(":")[0] == device for k in r.names)
        ]
        return found[0] if len(found) == 1 else None
