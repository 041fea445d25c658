"""What a command asked for (:class:`PlanRequest`), and the detection that `plan`, `run` and
`devices` start with: plugins, devices, who runs each, and the chosen cards. `devices` needs no
more than this; the rest of the pipeline is strata_core.plan.pipeline."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import attrs

from .. import log
from ..answer_cache import Recorder
from ..api.manager import PluginManager
from ..api.records import DetectionContext
from ..detect.examples import sysfs_root
from ..errors import StrataError
from . import config as run_config
from .claims import Assignment, assign
from .context import this_os
from .devices import DeviceScan, scan
from .selection import DeviceChoice, Selection, choose_backend

#: libdrm's marketing names of AMD cards by PCI device id and revision, where Linux
#: distributions put it (Debian: libdrm-common); STRATA_AMDGPU_IDS names another ("": none)
AMDGPU_IDS = Path("/usr/share/libdrm/amdgpu.ids")


@attrs.frozen
class PlanRequest:
    """What the user asked for, from the command line and the environment, read once.

    ``choice`` is None where the command line names no cards (the run config may);
    ``engine_args`` are the user's own engine arguments after ``run --`` (they win);
    ``for_run`` adds what a run needs besides the decisions (``Plan.host``, ``Plan.run``);
    ``recorder`` reads every file the plan depends on, for the answer cache.
    """

    env: Mapping[str, str] = attrs.field(factory=dict)
    config: Path | None = None
    sysfs: Path | None = None
    hip: bool | None = None
    choice: DeviceChoice | None = None
    device: str | None = None
    integrated: bool = False
    os: str | None = None
    kv: str | None = None
    pack: str | None = None
    kv_streaming: bool = False
    vision: str | None = None
    ple_table_gib: float | None = None
    profile: Path | None = None
    hipblaslt: str | None = None
    rocblas: str | None = None
    engine_args: tuple[str, ...] = ()
    threads: int = 0
    for_run: bool = False
    recorder: Recorder = attrs.field(factory=Recorder, eq=False, repr=False)


@attrs.frozen
class Detected:
    """Plugins, devices, who runs each, and the chosen cards."""

    manager: PluginManager
    found: DeviceScan
    assignments: tuple[Assignment, ...]
    selection: Selection
    problems: tuple[str, ...]

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every problem so far, the plugins that broke in any hook call included."""
        return (*self.manager.problems, *self.found.problems, *self.problems)


def detection_context(request: PlanRequest) -> DetectionContext:
    """The detection context for the request's sysfs root, HIP probe choice and environment."""
    env = request.env
    given = str(request.sysfs) if request.sysfs else env.get("STRATA_SYSFS")
    root = sysfs_root(given, env) if given else Path("/sys")
    if given and not root.is_dir():
        where = f"--sysfs {given}" if request.sysfs else f"STRATA_SYSFS={given}"
        raise StrataError(f"{where}: no such directory")
    hip = request.hip
    if hip is None:
        hip = root == Path("/sys") and env.get("STRATA_HIP_PROBE", "1") != "0"
    cuda = env.get("STRATA_CUDA_PROBE", "1" if root == Path("/sys") else "0") != "0"
    names = env.get("STRATA_AMDGPU_IDS", str(AMDGPU_IDS))
    return DetectionContext(
        sysfs=root,
        env=dict(env),
        hip_probe=hip,
        hip_timeout_s=seconds_variable(env, "STRATA_HIP_PROBE_TIMEOUT", 15.0),
        cuda_probe=cuda,
        amdgpu_ids=Path(names) if names else None,
        recorder=request.recorder,
    )


def seconds_variable(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (math.isfinite(value) and value > 0):
        raise StrataError(f"{name}={raw}: expected a positive number of seconds")
    return value


def device_choice(request: PlanRequest, config: run_config.RunConfig) -> DeviceChoice:
    """The cards the user asked for: the command line, else the run config's ``hip_ordinal``
    or ``gpu``."""
    if request.choice is not None:
        return request.choice
    roles = {int(k): v for k, v in config.gpu_roles.items()}
    where = str(run_config.find(request.config, request.env, request.recorder))
    if config.hip_ordinal is not None:
        return DeviceChoice(gpu=config.hip_ordinal, roles=roles, source=where, key="hip_ordinal")
    if config.gpu is not None or config.gpu_roles:
        key = "gpu_roles" if roles else "gpu"
        if isinstance(config.gpu, int):
            return DeviceChoice(gpu=config.gpu, roles=roles, source=where, key=key)
        return DeviceChoice(gpus=config.gpu, roles=roles, source=where, key=key)
    return DeviceChoice()


def chosen_plugin(request: PlanRequest, config: run_config.RunConfig) -> str | None:
    return request.env.get("STRATA_ARCH_PLUGIN") or config.arch_plugin


def detect(request: PlanRequest, config: run_config.RunConfig) -> Detected:
    """Discover plugins, detect devices, assign plugins and choose cards."""
    context = detection_context(request)
    manager = PluginManager.discover(request.env)
    found = scan(manager, context)
    assignments, problems = assign(manager, found.devices, chosen_plugin(request, config))
    selection = choose_backend(
        assignments, device_choice(request, config), request.os or this_os()
    )
    for a in assignments:
        log.debug(
            f"{a.device.name} ({a.device.gfx}, index {a.device.index}): {a.reason}",
            kind="detection",
            seen_by=",".join(a.device.seen_by),
        )
    log.debug(f"selected {list(selection.indices)}: {selection.reason}", kind="selection")
    return Detected(manager, found, tuple(assignments), selection, tuple(problems))
