"""The plan: for one device and context, every switch with its value, source and reason, the
engine arguments, the package, and the start lines. Building it changes nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ..answer_cache import Recorder
from ..api.arch import fallback
from ..api.manager import PluginManager
from ..api.records import Device, KernelChoice, KernelLibrary, RunContext, Workload
from ..api.switches import Default, Resolved, Switch
from ..archdb import SupportStatus
from ..gpu.backends import BACKENDS, backend_for
from . import packages
from .core_switches import CONTROL_VARIABLES, page_variables, undeclared_note
from .pictures import PictureReader, picture_reader
from .resolve import parse_engine_args, resolve

if TYPE_CHECKING:  # the tables are read only by a plan for a card or the host
    from ..host.threads import ThreadChoice
    from ..tuning.lookup import TuningDecision
    from ..tuning.versions import LibraryVersion

CORE = "core"
HOST = "host"
DEFAULT_WORKLOAD = Workload()


def backend_of(device: Device) -> str:
    """What runs a device: its vendor's GPU backend (strata_core.gpu.backends), else the host."""
    return backend_for(device.vendor) or HOST


def with_tables(
    kernels: Mapping[str, KernelChoice], decisions: Mapping[str, TuningDecision]
) -> dict[str, KernelChoice]:
    """``kernels`` with the prompt GEMM's tuning table where the plan takes one: hipBLAS with a
    hipBLASLt table is the hipBLASLt path; a rocBLAS table serves the FP16 route; cuBLASLt
    takes its own; the host's BLAS says whether a host table picks its calls."""
    chosen = dict(kernels)
    gemm = chosen.get("prompt_gemm")
    hipblaslt, rocblas = decisions.get("hipblaslt"), decisions.get("rocblas")
    cublaslt, host = decisions.get("cublaslt"), decisions.get("host")
    if gemm is None:
        return chosen
    if gemm.variant == "blas" and host is not None:
        how = (
            f"the host tuning table {host.table} picks the call per shape"
            if host.used
            else f"one matmul per shape ({host.reason})"
        )
        chosen["prompt_gemm"] = attrs.evolve(gemm, reason=f"{gemm.reason}; {how}")
    if gemm.variant == "hipblas" and hipblaslt is not None and hipblaslt.used:
        chosen["prompt_gemm"] = KernelChoice(
            "prompt_gemm", "hipblaslt", f"hipBLASLt with the tuning table {hipblaslt.table}"
        )
    elif gemm.variant == "cublaslt" and cublaslt is not None and cublaslt.used:
        chosen["prompt_gemm"] = attrs.evolve(
            gemm, reason=f"{gemm.reason}, with the tuning table {cublaslt.table}"
        )
    elif gemm.variant.startswith("rocblas-f16") and rocblas is not None and rocblas.used:
        chosen["prompt_gemm"] = attrs.evolve(
            gemm, reason=f"{gemm.reason}; the FP16 route with the rocBLAS table {rocblas.table}"
        )
    return chosen


@attrs.frozen
class HostRun:
    """The host backend: what runs when no card can, and what a card's results are checked
    against. ``isa`` is the instruction set its kernels run with (the matvec choice);
    ``tuning`` the host BLAS table the run takes; ``threads`` its kernels' threads."""

    kernels: Mapping[str, KernelChoice]
    isa: str
    tuning: TuningDecision
    threads: ThreadChoice


@attrs.frozen
class RunSettings:
    """What `strata-core run` needs besides the decisions: the workload, the seconds the GPU
    run may take, and on a card the plugin's kernel library,
    the runtimes to try in order (the HIP runtime's or the CUDA driver's) and the environment
    of the GPU run's child process (the one the command started with: the runtime reads its
    visibility variables there)."""

    workload: Workload
    timeout_s: float
    kernel_library: KernelLibrary | None
    runtime_libraries: tuple[str, ...]
    child_env: Mapping[str, str]
    #: the files the prompt GEMM's vendor library is loaded from, in order
    gemm_libraries: tuple[str, ...] = ()
    #: the seconds the child's first contact with the runtime may take (the probe's limit)
    contact_timeout_s: float = 15.0


@attrs.frozen
class EngineCards:
    """The cards the engine runs on, told to it as the reference page numbers them ("--gpu N
    and the config's "gpu" are HIP numbers"; CUDA ordinals on an NVIDIA card): ``indices`` in
    run order, the last the main card of a layer split; ``roles`` where the user said them;
    ``given`` the engine flags the user passed after ``run --``, which win."""

    backend: str
    indices: tuple[int, ...]
    roles: Mapping[int, str] = attrs.field(factory=dict)
    given: frozenset[str] = frozenset()

    def argv(self) -> list[str]:
        parts = [] if "--backend" in self.given else ["--backend", self.backend]
        if self.given & {"--gpu", "--gpu-roles"}:
            return parts
        parts += ["--gpu", ",".join(map(str, self.indices))]
        if self.roles:
            parts += ["--gpu-roles", ",".join(f"{i}={r}" for i, r in self.roles.items())]
        return parts


@attrs.frozen
class Resolution:
    """A card's switches resolved and its kernels chosen by the plugin that runs it: the first
    stage of a plan (:func:`resolve_card`), which the tables, the host's run and the run's
    settings are decided on."""

    device: Device
    plugin: str
    context: RunContext
    package: packages.Package | None
    switches: Mapping[str, Resolved]
    args: Mapping[str, Resolved]
    log: tuple[str, ...]
    warnings: tuple[str, ...]
    extra_env: Mapping[str, str]
    kernels: Mapping[str, KernelChoice]
    pictures: PictureReader | None

    @property
    def backend(self) -> str:
        """What runs: ``hip`` on an AMD card, ``cuda`` on an NVIDIA card, else ``host``."""
        return backend_of(self.device)

    def as_plan(self) -> Plan:
        """The plan of this stage alone: no tables, host run, run settings or cards."""
        return Plan(**attrs.asdict(self, recurse=False))


@attrs.frozen
class TuningStage:
    """The tables a plan takes (by library), the kernel choices they change, and their start
    lines and warnings."""

    decisions: Mapping[str, TuningDecision]
    kernels: Mapping[str, KernelChoice]
    log: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@attrs.frozen
class Plan(Resolution):
    """What runs and why: the card's resolution, its kernels as the tables leave them, and the
    stages decided on it (:func:`strata_core.plan.pipeline.make_plan` builds it once)."""

    tuning: Mapping[str, TuningDecision] = attrs.field(factory=dict)
    #: the host backend's: in a plan for the host, and for a run (PlanRequest.for_run)
    host: HostRun | None = None
    #: for a run only
    run: RunSettings | None = None
    #: the cards of this PC the engine is told to use; None for the host or a named card
    cards: EngineCards | None = None
    #: what the run is for besides the switches (``kv``, ``kv_streaming``, ``backend``,
    #: ``cards``), each with where it came from: ``user`` (strata-core's options), ``config``,
    #: ``engine argument`` (after `run --`) or ``builtin`` (nobody said)
    facts: Mapping[str, Resolved] = attrs.field(factory=dict)

    def verbose(self, library: str) -> bool:
        """STRATA_HIPBLASLT_VERBOSE=1 / STRATA_ROCBLAS_VERBOSE=1, wherever the user set it."""
        resolved = self.switches.get(f"STRATA_{library.upper()}_VERBOSE")
        return resolved is not None and resolved.value == "1"

    def engine_env(self) -> dict[str, str]:
        """The environment the engine gets on top of the user's: every value strata decided
        or the run config set, the run config's other variables, and where the tables the
        plan takes are."""
        chosen = {
            n: r.value
            for n, r in self.switches.items()
            if r.value is not None and r.source != "user"
        }
        tables = {k: v for d in self.tuning.values() for k, v in d.engine_env.items()}
        return dict(self.extra_env) | tables | chosen

    def engine_args(self) -> list[str]:
        """The arguments the engine gets after the user's own: every argument value strata
        decided or the run config set, the KV cache the plan is for (:meth:`_told`), then the
        backend and cards."""
        decided = [
            part
            for flag, r in self.args.items()
            if r.value is not None and r.source != "user"
            for part in (flag, r.value)
        ]
        return decided + self._told() + (self.cards.argv() if self.cards else [])

    def _told(self) -> list[str]:
        """The KV cache the plan is for, where strata-core's --kv or the run config's args
        named it: the engine gets it (an engine argument after `run --` is the user's own)."""
        told = []
        kv, streaming = self.facts.get("kv"), self.facts.get("kv_streaming")
        if kv is not None and kv.value and kv.source in ("user", "config"):
            told += ["--kv", kv.value]
        if streaming is not None and streaming.value and streaming.source == "config":
            told += ["--kv-resident", streaming.value]
        return told

    def explain(self, name: str) -> Resolved:
        """How the switch or engine argument ``name`` was decided (KeyError for a name that
        neither the core nor this plan's plugin declares)."""
        return self.switches[name] if name in self.switches else self.args[name]


def declarations(
    manager: PluginManager, plugins: tuple[str, ...]
) -> tuple[dict[str, Switch], list[str]]:
    """The switches the named plugins declare; a name declared twice keeps the first."""
    switches: dict[str, Switch] = {}
    warnings = []
    for plugin, declared in manager.switch_declarations(plugins):
        for switch in declared:
            if switch.name in switches:
                warnings.append(f"plugin {plugin} declares {switch.name} again; the first is kept")
            else:
                switches[switch.name] = switch
    return switches, warnings


def resolve_card(
    manager: PluginManager,
    device: Device,
    plugin: str,
    context: RunContext,
    user: Mapping[str, str],
    config_env: Mapping[str, str],
    config_args: tuple[str, ...],
    config_name: str,
    workload: Workload = DEFAULT_WORKLOAD,
) -> Resolution:
    """Resolve every switch for ``device`` run by ``plugin``, and choose its kernels.

    ``user`` is the user's environment plus the engine arguments given on the command line
    (as ``--flag: value``); ``config_env`` and ``config_args`` come from the run config.
    ``context.given`` is filled here from ``user`` and the run config.
    """
    plugins = (CORE, plugin)
    switches, warnings = declarations(manager, plugins)
    backend = backend_of(device)
    if backend != HOST:  # a GPU backend's plan holds no other backend's switches
        switches = {n: s for n, s in switches.items() if not s.backends or backend in s.backends}
    flags = {n for n, s in switches.items() if s.is_arg}
    config = {k: v for k, v in config_env.items() if k in switches and not switches[k].is_arg}
    config |= parse_engine_args(config_args, flags)
    user_given = {k: v for k, v in user.items() if k in switches}
    context = attrs.evolve(context, given=config | user_given, args=config_args)

    defaults: dict[str, Default] = {}
    log: list[str] = []
    for name, answer in manager.switch_defaults(plugins, device, context):
        for default in answer.values:
            if default.name in switches:
                defaults[default.name] = default
            else:
                warnings.append(
                    f"plugin {name} gives a default for {default.name}, "
                    "which no plugin of this card declares; ignored"
                )
        log += answer.log
        warnings += answer.warnings

    resolved, problems = resolve(
        switches, user_given, config, config_name, defaults, device, context.os
    )
    warnings += problems
    warnings += _undeclared(manager, user, config_env, switches, config_name, plugin)
    package, pictures = None, None
    gpu = BACKENDS.get(backend)
    if gpu is not None and gpu.packaged:
        pictures = picture_reader(device, context.os, context.vision)
        package = packages.package_for(device.gfx, context.os)
        if package is None and packages.opted_in(device.gfx, context.os, user):
            log.append(packages.source_build(device, context.os))
        elif package is None:
            warnings.append(packages.refusal(device, context.os))
        warnings += support_notes(device)
    values = {n: r.value for n, r in resolved.items()}
    kernels = {
        choice.op: choice
        for choice in manager.kernel_choices(plugin, device, context, values, workload)
    }
    return Resolution(
        device=device,
        plugin=plugin,
        context=context,
        package=package,
        switches={n: r for n, r in resolved.items() if not switches[n].is_arg},
        args={n: r for n, r in resolved.items() if switches[n].is_arg},
        log=tuple(log),
        warnings=tuple(warnings),
        extra_env={k: v for k, v in config_env.items() if k not in switches},
        kernels=kernels,
        pictures=pictures,
    )


def _undeclared(
    manager: PluginManager,
    user: Mapping[str, str],
    config_env: Mapping[str, str],
    switches: Mapping[str, Switch],
    config_name: str,
    plugin: str,
) -> list[str]:
    """Warnings for STRATA_* variables that no switch of this card's build has."""
    owners = {s.name: (p, s) for p, declared in manager.switch_declarations() for s in declared}
    documented = page_variables()
    warnings = []
    for where, names in (("the environment", user), (config_name, config_env)):
        for name in sorted(names):
            if not name.startswith("STRATA_") or name in switches or name in CONTROL_VARIABLES:
                continue
            if name in owners:
                owner, switch = owners[name]
                build = (
                    f"engine's {' and '.join(b.upper() for b in switch.backends)}"
                    if owner == CORE and switch.backends
                    else owner
                )
                note: str | None = f"is read only by the {build} build; {plugin} does not read it"
            elif name in documented:
                note = undeclared_note(name, plugin)
            else:
                note = "is no switch that strata knows"
            if note:
                warnings.append(f"{name} (set in {where}) {note}")
    return warnings


def support_notes(device: Device) -> list[str]:
    arch = device.arch
    if arch is None:
        return []
    if arch.status is SupportStatus.NAMED_NOT_SUPPORTED:
        return [f"{device.name} ({device.gfx}) is named but not supported by setup: {arch.note}"]
    if arch.status is SupportStatus.BUILDS_BY_HAND:
        return [f"{device.name} ({device.gfx}) builds by hand only: {arch.note}"]
    return []


def tuning_of(
    plan: Resolution,
    manager: PluginManager,
    versions: Mapping[str, LibraryVersion],
    dirs: list[Any],
    recorder: Recorder,
) -> TuningStage:
    """The card's table decisions (hipBLASLt and rocBLAS on an AMD card, cuBLASLt on an
    NVIDIA card), their start lines and warnings, and the prompt GEMM's path with the table
    it takes. ``dirs`` are the folders searched before the plugin's own."""
    from ..tuning.lookup import decide_cublaslt, decide_hipblaslt, decide_rocblas

    folders = [*dirs, *manager.tuning_dirs(plan.plugin, plan.device)]
    gfx, switches = plan.device.gfx, plan.switches
    arch = plan.device.arch or fallback(gfx)
    decide: dict[str, Callable[[], TuningDecision]] = {
        "hipblaslt": lambda: decide_hipblaslt(
            arch, switches, versions["hipblaslt"], folders, recorder
        ),
        "rocblas": lambda: decide_rocblas(arch, switches, versions["rocblas"], folders, recorder),
        "cublaslt": lambda: decide_cublaslt(gfx, switches, versions["cublaslt"], folders, recorder),
    }
    decisions = {library: decide[library]() for library in BACKENDS[plan.backend].blas_libraries}
    return TuningStage(
        decisions,
        with_tables(plan.kernels, decisions),
        tuple(line for d in decisions.values() for line in d.log),
        tuple(w for d in decisions.values() for w in d.warnings),
    )
