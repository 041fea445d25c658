"""What a run reads from its plan: the run settings and the host backend (refused for a plan
not made for a run), the card a GPU child opens, and the runtimes' names a message gives."""

from __future__ import annotations

from pathlib import Path

from ..errors import StrataError
from ..plan.plan import HostRun, Plan, RunSettings
from .gpu_backend import GpuCard


def settings_of(plan: Plan) -> tuple[RunSettings, HostRun]:
    """The plan's run settings and host backend; StrataError where it has none."""
    if plan.run is None or plan.host is None:
        raise StrataError("this plan was not made for a run")
    return plan.run, plan.host


def card_of(plan: Plan, settings: RunSettings) -> GpuCard:
    """The plan's card as a GPU child opens it: backend, plugin, kernel library, device and
    the runtimes to try."""
    return GpuCard(
        plan.backend,
        plan.plugin,
        settings.kernel_library,
        plan.device.index,
        settings.runtime_libraries,
    )


def runtime_names(settings: RunSettings) -> str:
    """The runtime libraries' file names, each once, in the order they are tried."""
    return ", ".join(dict.fromkeys(Path(p).name for p in settings.runtime_libraries))
