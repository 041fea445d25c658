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
from ..detect.recording import RecordingContext
from ..digits import is_digits
from ..errors import StrataError
from . import config as run_config
from . import engine_facts
from .claims import Assignment, assign
from .context import this_os
from .devices import DeviceScan, scan
from .selection import (
    DeviceChoice,
    NamedBackend,
    Selection,
    choose_backend,
    parse_roles,
    roles_order,
)

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
    #: what the user asked for: the cards (device_choice) and a backend (named_backend)
    choice: DeviceChoice = DeviceChoice()
    backend: NamedBackend | None = None

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
    return RecordingContext(
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


def engine_choice(request: PlanRequest) -> DeviceChoice | None:
    """The cards the engine's own --gpu or --gpu-roles after `run --` name, which the engine
    runs on; None where they name none."""
    facts = engine_facts.read(request.engine_args, (), "")
    source = "the engine's arguments after run --"
    if "--gpu-roles" in facts:
        roles = parse_roles(facts["--gpu-roles"].value)
        return DeviceChoice(roles=roles, source=source, key="--gpu-roles")
    if "--gpu" not in facts:
        return None
    text = facts["--gpu"].value
    if not text or not all(is_digits(n.strip()) for n in text.split(",")):
        raise StrataError(f"--gpu {text} after run --: expected HIP numbers such as 1 or 1,0")
    numbers = tuple(int(n) for n in text.split(","))
    if len(numbers) == 1:
        return DeviceChoice(gpu=numbers[0], source=source, key="--gpu")
    return DeviceChoice(gpus=numbers, source=source, key="--gpu")


def device_choice(request: PlanRequest, config: run_config.RunConfig) -> DeviceChoice:
    """The cards the user asked for: the engine's own --gpu after `run --` (the engine runs
    on them), the command line, else the run config's ``hip_ordinal`` or ``gpu``. Where the
    engine's and another choice name different cards, StrataError says both: no run plans for
    one card and starts the engine on another."""
    chosen = _asked_for(request, config)
    engine = engine_choice(request)
    if engine is None:
        return chosen
    if chosen.gpu is None and chosen.gpus is None and not chosen.roles:
        return engine
    theirs, ours = run_order(engine), run_order(chosen)
    if theirs != ours:
        option = "--gpu-roles" if chosen.roles else "--gpu" if chosen.gpu is not None else "--gpus"
        raise StrataError(
            f"{engine.said('--gpu')} ({numbers(theirs)}) and {chosen.said(option)} "
            f"({numbers(ours)}) name different cards: the engine would run on the one and "
            "strata plan for the other; give the cards once"
        )
    return engine


def numbers(order: tuple[int, ...] | str | None) -> str:
    """HIP 1, 0 (the main card last), or every card."""
    return f"HIP {', '.join(map(str, order))}" if isinstance(order, tuple) else "every card"


def run_order(choice: DeviceChoice) -> tuple[int, ...] | str | None:
    """The cards a choice names, in run order (the main card last)."""
    if choice.roles:
        return roles_order(choice.roles)
    return (choice.gpu,) if choice.gpu is not None else choice.gpus


def named_backend(request: PlanRequest, config: run_config.RunConfig) -> NamedBackend | None:
    """The backend the run config's "backend" or the engine's --backend names (StrataError
    where they name two)."""
    where = str(run_config.find(request.config, request.env, request.recorder))
    named = []
    if config.backend is not None:
        named.append(NamedBackend(config.backend, f"backend from {where}", "config"))
    fact = engine_facts.read(request.engine_args, config.args, where).get("--backend")
    if fact is not None:
        named.append(NamedBackend(fact.value, fact.where, fact.source))
    if len({n.name for n in named}) > 1:
        raise StrataError(
            f"{named[0].where} and {named[1].where} name two backends: one run has one backend"
        )
    return named[-1] if named else None


def _asked_for(request: PlanRequest, config: run_config.RunConfig) -> DeviceChoice:
    """The cards strata's command line names, else the run config's."""
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
    choice, backend = device_choice(request, config), named_backend(request, config)
    selection = choose_backend(assignments, choice, request.os or this_os(), backend)
    for a in assignments:
        log.debug(
            f"{a.device.name} ({a.device.gfx}, index {a.device.index}): {a.reason}",
            kind="detection",
            seen_by=",".join(a.device.seen_by),
        )
    log.debug(f"selected {list(selection.indices)}: {selection.reason}", kind="selection")
    return Detected(manager, found, tuple(assignments), selection, tuple(problems), choice, backend)
