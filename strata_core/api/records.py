"""Typed records that hooks take and return. All are frozen attrs classes."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from .arch import ArchRecord


@attrs.frozen
class DetectionContext:
    """What a detector may look at: a sysfs root and an environment, never the real ones."""

    sysfs: Path = Path("/sys")
    env: Mapping[str, str] = attrs.field(factory=dict)
    hip_probe: bool = True
    #: the seconds each probe (HIP runtime, NVML) may take
    hip_timeout_s: float = 15.0
    cuda_probe: bool = False
    #: libdrm's table of marketing names by PCI device id and revision (``amdgpu.ids``);
    #: None: no such table is read
    amdgpu_ids: Path | None = None


@attrs.frozen
class DeviceReport:
    """One detector's facts about one GPU. Unknown facts stay None.

    Reports from several detectors are merged into one :class:`Device` by PCI address
    (or, without one, by unique id).
    """

    source: str
    pci: str | None = None
    unique_id: str | None = None
    node_id: int | None = None
    hip_index: int | None = None
    cuda_index: int | None = None
    name: str | None = None
    gfx: str | None = None
    #: the PCI device id and revision (what names the card where ``name`` is not known)
    device_id: int | None = None
    revision: int | None = None
    wave_size: int | None = None
    vram_bytes: int | None = None
    gtt_bytes: int | None = None
    integrated: bool | None = None
    integrated_evidence: str | None = None
    vendor: str = "amd"
    #: what hides the card from its runtime (``CUDA_VISIBLE_DEVICES=1``), where a detector
    #: applies the runtime's visibility itself
    hidden_by: str | None = None


@attrs.frozen
class Detection:
    """What a detector returns: its reports and one line for each problem it met."""

    reports: tuple[DeviceReport, ...] = ()
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    #: the vendors whose visible cards ``reports`` lists completely (a driver's answer): a
    #: card of theirs that only another detector saw is hidden
    complete_for: tuple[str, ...] = ()


@attrs.frozen
class Device:
    """One GPU as strata sees it after detection, visibility and overrides."""

    index: int | None
    name: str
    gfx: str
    physical_gfx: str
    family: str
    wave_size: int | None
    vram_bytes: int | None
    integrated: bool
    integrated_evidence: str
    pci: str | None = None
    unique_id: str | None = None
    node_id: int | None = None
    gtt_bytes: int | None = None
    seen_by: tuple[str, ...] = ()
    override: str | None = None
    hidden_by: str | None = None
    #: who made it: ``amd``, ``nvidia``, or ``cpu`` for the host
    vendor: str = "amd"
    #: what the target is (its plugin's record, or the core's fallback); None for the host
    arch: ArchRecord | None = attrs.field(default=None, repr=False)

    @property
    def visible(self) -> bool:
        return self.hidden_by is None


@attrs.frozen
class Claim:
    """A plugin's answer for one device: a specificity score (0: cannot run it) and why."""

    score: int
    reason: str

    @classmethod
    def refuse(cls, reason: str) -> Claim:
        return cls(0, reason)


@attrs.frozen
class RunContext:
    """What a run looks like besides the device, for switch defaults.

    ``given`` holds every switch the user's environment or the run config sets (the user's
    value where both do); ``args`` the engine arguments the run config gives; ``vision`` the
    picture reader the user named (setup's --vision).
    """

    os: str = "linux"
    kv: str | None = None
    pack: str | None = None
    kv_streaming: bool = False
    vision: str | None = None
    other_cards: tuple[Device, ...] = ()
    ram_bytes: int | None = None
    ple_table_bytes: int | None = None
    given: Mapping[str, str] = attrs.field(factory=dict)
    args: tuple[str, ...] = ()

    @property
    def discrete_card_present(self) -> bool:
        return any(not card.integrated for card in self.other_cards)

    def arg_given(self, flag: str) -> bool:
        return any(a == flag or a.startswith(flag + "=") for a in self.args)


@attrs.frozen
class Workload:
    """The shape of a run's work, from a model profile (strata_core/profiles/)."""

    name: str = "small-moe"
    hidden: int = 2048
    ffn: int = 4096
    experts: int = 128
    experts_per_token: int = 8
    context_cells: int = 131072
    cells_kept: int = 256
    prompt_tokens: int = 512
    prompt_queries: int = 256
    decode_steps: int = 16
    prompt_steps: int = 2
    #: tokens of every other decode step (a batched decode); 1: every step decodes one token
    decode_batch_tokens: int = 1
    #: the buffer a card's read bandwidth is measured on (the host reads 256 MiB)
    gpu_read_bytes: int = 1 << 30
    #: a decoder layer's dense Q8_0 matrices (rows x cols), in the order a decode step runs
    #: them; none: the one ffn x hidden matrix
    dense: tuple[tuple[int, int], ...] = ()
    #: the layers a decode step runs the dense matrices of, each with weights of its own
    layers: int = 1

    @property
    def dense_shapes(self) -> tuple[tuple[int, int], ...]:
        """The shapes of a layer's dense matrices."""
        return self.dense or ((self.ffn, self.hidden),)


@attrs.frozen
class KernelChoice:
    """The variant of one operation that a run takes on a device, and why."""

    op: str
    variant: str
    reason: str


@attrs.frozen
class KernelLibrary:
    """A plugin's HIP kernel library as its build left it: one code object per target."""

    directory: Path
    targets: tuple[str, ...]
    code_objects: Mapping[str, Path] = attrs.field(factory=dict)
    compiler: str | None = None
    problems: tuple[str, ...] = ()

    @property
    def missing(self) -> tuple[str, ...]:
        """Targets the build was asked for that have no code object."""
        return tuple(t for t in self.targets if t not in self.code_objects)
