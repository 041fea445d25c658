"""Built-in detector: what NVML (libnvidia-ml.so.1, the library nvidia-smi reads) says of
each NVIDIA card, where sysfs shows one (strata_core.detect.hardware): name, PCI address,
memory, compute capability, driver and CUDA versions. NVML creates no CUDA context and
answers in milliseconds, so it runs in a fork of this process (a driver that crashes, hangs
or prints still costs one line) and the CUDA driver is opened only by a run. NVML lists every
card; CUDA_VISIBLE_DEVICES is applied here as the driver applies it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .. import log
from ..api.hookspec import hookimpl
from ..api.records import Detection, DetectionContext, DeviceReport
from ..people import counted
from .hardware import NVIDIA_VENDOR, display_functions, nvidia_gpu
from .nvml_facts import check_card, memory_size, place_unaddressed
from .recording import recorder_of
from .visibility import cuda_visible_devices

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

strata_api_version = 2


@hookimpl
def strata_detect_devices(context: DetectionContext) -> Detection | None:
    if not context.cuda_probe:
        return None
    evidence = nvidia_gpu(context.sysfs, recorder_of(context))
    if evidence is None:
        log.debug(
            f"NVML not asked: no NVIDIA PCI display function under {context.sysfs}",
            kind="detection",
        )
        return None
    log.debug(f"asking NVML: {evidence}", kind="detection")
    return run_probe(context)


def run_probe(context: DetectionContext) -> Detection:
    from .. import library_search
    from ..child import ChildFailed, run_json_forked
    from ..cuda import nvml

    library_search.record(context.env, nvml.VARIABLE, recorder_of(context))
    from ..cuda import _nvml_ffi  # noqa: F401 - imported here, not in the fork

    try:
        answer = run_json_forked(
            nvml.query, context.env, context.hip_timeout_s, "NVML probe", recorder_of(context)
        )
    except ChildFailed as failed:
        problem = str(failed)
        hint = " (STRATA_HIP_PROBE_TIMEOUT sets the limit)" if "no answer" in problem else ""
        return Detection(problems=(f"{problem}; NVIDIA cards are known by PCI only{hint}",))
    functions, _ = display_functions(context.sysfs, recorder_of(context))
    nvidia = [address for address, vendor in functions if vendor == NVIDIA_VENDOR]
    return interpret(answer, context.env, nvidia)


def interpret(
    answer: dict[str, Any], env: Mapping[str, str], functions: Sequence[str] = ()
) -> Detection:
    """Turn NVML's answer into reports by CUDA ordinal, CUDA_VISIBLE_DEVICES in ``env``
    applied, and a note; each card's facts checked (strata_core.detect.nvml_facts), a card
    NVML gave no PCI address placed among the NVIDIA PCI ``functions`` sysfs shows."""
    library = answer.get("library")
    if library is None:
        named = answer.get("named")
        if named:
            return Detection(problems=(f"no NVML: {named}",))
        tried = ", ".join(answer.get("tried") or ["libnvidia-ml.so.1"])
        return Detection(notes=(f"no NVIDIA driver found (tried {tried})",))
    versions = [f"driver {answer['driver_version']}"] if "driver_version" in answer else []
    if "cuda_version" in answer:
        versions.append(_cuda_version(answer["cuda_version"]))
    where = f"NVML {library}" + (f" ({', '.join(versions)})" if versions else "")
    if "error" in answer:
        return Detection(problems=(f"{where}: {answer['error']}",))
    listed = answer.get("devices")
    cards = [check_card(c, n) for n, c in enumerate(listed if isinstance(listed, list) else [])]
    place_unaddressed(cards, functions)
    migs = [[m["uuid"] for m in card.migs] for card in cards]
    visible = cuda_visible_devices([card.uuid for card in cards], migs, env)
    ordinal = {card: (n, mig) for n, (card, mig) in enumerate(visible.order)}
    reports = []
    for card in cards:
        index, mig = ordinal.get(card.position, (None, None))
        name = card.name or (None if card.pci else f"NVML device {card.position}")
        memory = card.memory
        if mig is not None:
            name = f"{name} MIG {mig}"
            chosen = next(m for m in card.migs if m["uuid"] == mig)
            memory = memory_size(chosen.get("total_mem"), card.problems)
        reports.append(
            DeviceReport(
                source="nvidia",
                pci=card.pci,
                cuda_index=index,
                name=name,
                gfx=card.target,
                vram_bytes=memory,
                integrated=False,
                integrated_evidence="NVML (it lists discrete cards only)",
                vendor="nvidia",
                hidden_by=visible.hidden.get(card.position),
            )
        )
    problems = tuple(
        f"{where}: device {card.position}: {'; '.join(card.problems)}"
        for card in cards
        if card.problems
    )
    shown = counted(len(cards), "device")
    if visible.hidden:
        shown = f"{len(visible.order)} of {shown}"
    return Detection(
        reports=tuple(reports),
        problems=problems,
        notes=(f"{where} sees {shown}",),
        complete_for=("nvidia",),
    )


def _cuda_version(version: int) -> str:
    """CUDA_VERSION is major * 1000 + minor * 10."""
    return f"CUDA {version // 1000}.{version % 1000 // 10}"
