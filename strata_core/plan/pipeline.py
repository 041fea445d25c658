"""The pipeline from a request to a Plan: plugins, devices, backend, claims, cards, context,
switches, kernels, tuning (docs/design.md, "The flow of one run").

A :class:`~strata_core.plan.detection.PlanRequest` is built once, from the command line and the
environment; everything below :func:`make_plan` reads only the request and the files it names,
and the Plan it returns is all that a run, an engine start or a rendering needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .. import archdb
from ..api.arch import ROCBLAS, Architectures
from ..api.manager import PluginManager
from ..api.records import Device, KernelChoice, RunContext, Workload
from ..api.switches import Resolved
from ..errors import StrataError
from ..gpu.backends import BACKENDS, numbering_of
from ..host.plugin import host_device
from . import config as run_config
from . import engine_facts, packages, profile
from .claims import Assignment, assign, builds_carry
from .context import ram_bytes, this_os
from .detection import (
    PlanRequest,
    chosen_plugin,
    detect,
    named_backend,
    seconds_variable,
)
from .devices import architectures, device_for
from .plan import (
    HOST,
    EngineCards,
    HostRun,
    Plan,
    Resolution,
    RunSettings,
    TuningStage,
    resolve_card,
    support_notes,
    tuning_of,
    with_tables,
)
from .resolve import parse_engine_args
from .selection import DeviceChoice, NamedBackend, Selection

GIB = 1 << 30
#: Engine arguments whose values a user gives after `run --`, which no default overrides.
ENGINE_FLAGS = {"--pcie-frac", "--pipeline-windows", "--ple-io"}
#: Seconds the GPU run may take before it is stopped (STRATA_RUN_TIMEOUT).
RUN_TIMEOUT_S = 600.0


@attrs.frozen
class PlanOutcome:
    """The plan, and the main card's assignment (which plugin claimed it, and why)."""

    plan: Plan
    assignment: Assignment
    selection: Selection
    manager: PluginManager
    config: run_config.RunConfig
    config_path: Path | None
    no_gpu: str | None = None

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.plan.warnings

    @property
    def notes(self) -> tuple[str, ...]:
        """What `devices` says about the chosen cards, after the host backend's line."""
        return (*((self.no_gpu,) if self.no_gpu else ()), *self.selection.notes)


def make_plan(request: PlanRequest) -> PlanOutcome:
    """The plan for the main card, a named card (``request.device``), or the host backend
    when no GPU can run."""
    env, recorder = request.env, request.recorder
    path, config = run_config.find_and_load(request.config, env, recorder)
    chosen = chosen_plugin(request, config)
    if request.device:
        found = named_card(request.device, request, config, chosen)
    else:
        found = detected_cards(request, config)
    manager, selection, main = found.manager, found.selection, found.main
    plugin = runnable_plugin(main, chosen, manager)
    config_name = str(path) if path else "the run config"
    facts, said = run_facts(request, config, config_name)
    context = run_context(request, config, found.others, facts)
    config_env = env_of_config(config)
    user = dict(env) | parse_engine_args(request.engine_args, ENGINE_FLAGS)
    workload = profile.load(request.profile, recorder)

    def resolve_on(device: Device, plugin: str) -> Resolution:
        return resolve_card(
            manager, device, plugin, context, user, config_env, config.args, config_name, workload
        )

    card = resolve_on(main.device, plugin)
    split = (
        packages.split_refusal(card.package, found.cards, card.context.os) if card.package else None
    )
    tuning = TuningStage({}, card.kernels)
    if card.backend in BACKENDS:
        from ..tuning.lookup import data_dir, search_dirs

        dirs = search_dirs(config.exe, env, ()) + [Path(d) for d in config.tuning.dirs]
        dirs.append(data_dir(env))
        tuning = tuning_of(card, manager, library_versions(request, card), dirs, recorder)
    host = None
    if plugin == HOST or request.for_run:
        host_card = card if plugin == HOST else resolve_on(host_device(), HOST)
        host = host_run(request, host_card, workload)
        if plugin == HOST:
            tables = {"host": host.tuning}
            tuning = TuningStage(tables, with_tables(card.kernels, tables))
    run = None
    if request.for_run:
        run = run_settings(request, manager, card, tuning.kernels, workload)
    cards = None
    if not request.device and selection.indices:
        given = {arg.partition("=")[0] for arg in request.engine_args if arg.startswith("--")}
        roles = selection.roles if found.choice.roles else {}
        cards = EngineCards(card.backend, selection.indices, roles, frozenset(given))
    facts |= card_facts(found, card.backend, bool(request.device))
    plan = Plan(
        device=card.device,
        plugin=card.plugin,
        context=card.context,
        package=None if split else card.package,
        switches=card.switches,
        args=card.args,
        log=card.log + tuning.log,
        # the manager's problems last of all, so that a plugin that broke in any hook above
        # is among them
        warnings=(
            *manager.problems, *found.problems, *said, *card.warnings,
            *((split,) if split else ()), *tuning.warnings,
        ),
        extra_env=card.extra_env,
        tuning=tuning.decisions,
        kernels=tuning.kernels,
        pictures=card.pictures,
        host=host,
        run=run,
        cards=cards,
        facts=facts,
    )  # fmt: skip
    return PlanOutcome(plan, main, selection, manager, config, path, found.no_gpu)


@attrs.frozen
class Cards:
    """The cards a plan is for: the plugin manager that claimed them, the selection, the main
    card's assignment (the host backend's where no GPU runs, and ``no_gpu`` says why), the
    other visible cards, the chosen cards, and the problems their detection met."""

    manager: PluginManager
    selection: Selection
    main: Assignment
    others: tuple[Device, ...]
    cards: tuple[Device, ...]
    problems: tuple[str, ...]
    no_gpu: str | None = None
    #: what the user asked for: the cards (none for a card named with --device) and a backend
    choice: DeviceChoice = DeviceChoice()
    backend: NamedBackend | None = None


def named_card(
    gfx: str, request: PlanRequest, config: run_config.RunConfig, chosen: str | None
) -> Cards:
    """The card ``--device`` names (``gfx``), alone: a card that is not in this PC."""
    manager = PluginManager.discover(request.env)
    archs = architectures(manager, request.recorder)
    device = named_device(gfx, request.integrated, archs, manager)
    assignments, problems = assign(manager, [device], chosen)
    main = assignments[0]
    selection = Selection((0,), {}, "--device")
    backend = named_backend(request, config)
    return Cards(manager, selection, main, (), (main.device,), tuple(problems), backend=backend)


def detected_cards(request: PlanRequest, config: run_config.RunConfig) -> Cards:
    """The cards of this PC: the main card of those chosen, or the host backend where no GPU
    can run; StrataError where a chosen card is one no plugin runs."""
    detected = detect(request, config)
    manager, selection = detected.manager, detected.selection
    problems = (*detected.found.problems, *detected.problems)
    refuse_unsupported(detected.assignments, selection, manager)
    no_gpu = None
    if selection.indices:
        main = next(
            a
            for a in detected.assignments
            if selection.selects(a.device) and a.device.index == selection.indices[-1]
        )
    else:
        no_gpu = f"no GPU to run on ({selection.reason}); the host backend runs"
        main = Assignment(host_device(), HOST, "host runs on the CPU")
    others = tuple(
        a.device for a in detected.assignments if a.device.visible and a.device is not main.device
    )
    cards = tuple(a.device for a in detected.assignments if selection.selects(a.device))
    return Cards(
        manager, selection, main, others, cards, problems, no_gpu, detected.choice, detected.backend
    )


def run_facts(
    request: PlanRequest, config: run_config.RunConfig, config_name: str
) -> tuple[dict[str, Resolved], list[str]]:
    """The KV cache and its streaming the run is for, each with where it came from: the
    engine's own argument after `run --` (the engine runs with it), else strata-core's option,
    else the run config's args; and the line that says so where strata-core's option and the
    engine's argument disagree."""
    found = engine_facts.read(request.engine_args, config.args, config_name)
    said = []
    kv = found.get("--kv")
    if kv is not None and request.kv is not None and kv.source == engine_facts.ENGINE:
        if kv.value != request.kv:
            said.append(
                f"--kv {request.kv} on strata-core's command line and {kv.where} differ: the "
                f"engine runs with its own, so the plan is for {kv.value}"
            )
    if kv is not None and (request.kv is None or kv.source == engine_facts.ENGINE):
        kv_fact = Resolved(kv.value, kv.source, kv.where)
    elif request.kv is not None:
        kv_fact = Resolved(request.kv, "user", f"--kv {request.kv} on strata-core's command line")
    else:
        kv_fact = Resolved(None, "builtin", "no --kv given: the engine's own KV cache")
    streaming = found.get("--kv-resident")
    if request.kv_streaming:
        stream_fact = Resolved("on", "user", "--kv-streaming on strata-core's command line")
    elif streaming is not None:
        stream_fact = Resolved(streaming.value, streaming.source, streaming.where)
    else:
        stream_fact = Resolved("off", "builtin", "no --kv-resident: the KV cache stays on the card")
    return {"kv": kv_fact, "kv_streaming": stream_fact}, said


def card_facts(found: Cards, backend: str, named_device: bool) -> dict[str, Resolved]:
    """The backend and the cards of the plan, with where each came from (no cards for a card
    named with --device, which is not in this PC)."""
    named, choice = found.backend, found.choice
    if named is None:
        backend_fact = Resolved(backend, "builtin", "the backend of the cards the plan is for")
    else:
        backend_fact = Resolved(named.name, named.source, named.where)
    if named_device:
        return {"backend": backend_fact}
    if choice.source == "command line":
        source = "user"
    elif choice.key in ("--gpu", "--gpu-roles"):
        source = engine_facts.ENGINE
    else:
        source = "builtin" if choice.key is None else "config"
    selection = found.selection
    cards = ",".join(map(str, selection.indices)) or None
    return {"backend": backend_fact, "cards": Resolved(cards, source, selection.reason)}


def run_context(
    request: PlanRequest,
    config: run_config.RunConfig,
    others: tuple[Device, ...],
    facts: Mapping[str, Resolved],
) -> RunContext:
    """What the plan is for besides the card: the OS, the KV cache and its streaming
    (``facts``), the model's pack, the picture reader, the other cards, the RAM and the PLE
    table."""
    return RunContext(
        os=request.os or this_os(),
        kv=facts["kv"].value,
        pack=request.pack,
        vision=request.vision,
        kv_streaming=facts["kv_streaming"].value != "off",
        other_cards=others,
        ram_bytes=ram_bytes(request.recorder),
        ple_table_bytes=_ple_table_bytes(request, config),
    )


def env_of_config(config: run_config.RunConfig) -> dict[str, str]:
    """The run config's env, with its [tuning] hipblaslt_table as STRATA_HIPBLASLT_TABLE
    where the env does not set that."""
    config_env = dict(config.env)
    if config.tuning.hipblaslt_table is not None:
        config_env.setdefault(
            "STRATA_HIPBLASLT_TABLE", "on" if config.tuning.hipblaslt_table else "off"
        )
    return config_env


def refuse_unsupported(
    assignments: Sequence[Assignment], selection: Selection, manager: PluginManager
) -> None:
    """AMD_HIP.md: "Every chosen card must be one of the supported architectures"; a chosen
    card that no plugin runs is refused, naming it, its family and the installed builds'
    targets ("A binary carried to another card stops with the card's name, its architecture
    and the build's list"); so is a split of a wave64 and a wave32 card, which no build runs."""
    numbering = numbering_of(selection.vendor)
    for a in assignments:
        if selection.selects(a.device) and not a.usable:
            d = a.device
            carried = builds_carry(manager, d)
            raise StrataError(
                f"{selection.reason}: {numbering} {d.index} is {d.name} ({d.gfx}, {d.family}), "
                f"which {a.reason}{f'; {carried}' if carried else ''}; every chosen card must "
                "be one of the supported architectures"
            )
    chosen = {d.wave_size: d for d in (a.device for a in assignments) if selection.selects(d)}
    if 32 in chosen and 64 in chosen:
        wide, narrow = chosen[64], chosen[32]
        raise StrataError(
            f"{selection.reason}: {numbering} {wide.index} ({wide.gfx}) is wave64 and "
            f"{numbering} {narrow.index} ({narrow.gfx}) wave32, and no build of the engine runs "
            f'both: the wave32 backend refuses {wide.gfx}, and "a wave32 card seen by this '
            'build is refused at start" (AMD_HIP.md, gfx906)'
        )


def host_run(request: PlanRequest, host_plan: Resolution, workload: Workload) -> HostRun:
    """What the host backend runs: its kernel choices, instruction set, tuning table and
    threads (measured now only for a run)."""
    from ..host.platform import blas_version, isa_level
    from ..host.threads import host_threads, table_choice
    from ..tuning.lookup import data_dir, decide_host, search_dirs

    dirs = [*search_dirs(None, request.env, ()), data_dir(request.env)]
    tuning = decide_host(isa_level(), blas_version(), dirs, request.recorder)
    table = tuning.loaded
    recorded = table_choice(table.meta, tuning.table or "") if table and tuning.used else None
    threads = host_threads(
        request.threads, request.env, recorded, workload, request.recorder, request.for_run
    )
    return HostRun(
        kernels=host_plan.kernels,
        isa=host_plan.kernels["matvec_q8_0"].variant,
        tuning=tuning,
        threads=threads,
    )


def run_settings(
    request: PlanRequest,
    manager: PluginManager,
    plan: Resolution,
    kernels: Mapping[str, KernelChoice],
    workload: Workload,
) -> RunSettings:
    """What the workload runs with: its shape, threads, and on a card the plugin's kernel
    library, the runtimes to try, the prompt GEMM library's files and the time the GPU run
    may take."""
    from ..gpu.backends import runtime_candidates
    from ..tuning.libraries import library_paths

    library = None
    gemm_libraries: tuple[str, ...] = ()
    env = request.env
    if plan.plugin != HOST:
        library = manager.kernel_libraries((plan.plugin,)).get(plan.plugin)
        gemm_libraries = library_paths(kernels["prompt_gemm"].variant, env)
    return RunSettings(
        workload=workload,
        kernel_library=library,
        runtime_libraries=tuple(runtime_candidates(plan.backend, env)),
        child_env=dict(env),
        timeout_s=seconds_variable(env, "STRATA_RUN_TIMEOUT", RUN_TIMEOUT_S),
        gemm_libraries=gemm_libraries,
        contact_timeout_s=seconds_variable(env, "STRATA_HIP_PROBE_TIMEOUT", 15.0),
    )


def library_versions(request: PlanRequest, plan: Resolution) -> dict[str, Any]:
    """hipBLASLt, rocBLAS and cuBLASLt versions: given on the command line, else probed where
    a table decision needs one, except for a card that is not in this PC."""
    from ..tuning import versions

    given = {
        "hipblaslt": versions.hipblaslt_number(request.hipblaslt) if request.hipblaslt else None,
        "rocblas": versions.rocblas_version(request.rocblas) if request.rocblas else None,
        "cublaslt": None,
    }
    values = {n: r.value for n, r in plan.switches.items()}
    arch = plan.device.arch
    backend = BACKENDS.get(plan.backend)
    libraries = backend.blas_libraries if backend else ()
    needed = {
        "hipblaslt": "hipblaslt" in libraries
        and (values["STRATA_HIPBLASLT_TABLE"] == "on" or values["STRATA_HIPBLASLT_TUNING"]),
        "rocblas": "rocblas" in libraries
        and (
            (arch is not None and arch.table_library == ROCBLAS)
            or values["STRATA_ROCBLAS_TUNING"] is not None
        ),
        "cublaslt": "cublaslt" in libraries
        and (
            values.get("STRATA_CUBLASLT_TABLE") == "on"
            or values.get("STRATA_CUBLASLT_TUNING") is not None
        ),
    }
    unknown = versions.LibraryVersion(None, "not needed: no table is asked for")
    probed = dict.fromkeys(given, unknown)
    if request.device:
        probed = dict.fromkeys(
            given, versions.LibraryVersion(None, "not probed: the card is not in this PC")
        )
    elif any(needed[k] and not given[k] for k in given):
        env = request.env
        timeout = seconds_variable(env, "STRATA_HIP_PROBE_TIMEOUT", 15.0)
        probed = versions.probe(env, timeout, request.recorder)
    return {k: versions.LibraryVersion(v, "given") if v else probed[k] for k, v in given.items()}


def named_device(
    gfx: str, integrated: bool, archs: Architectures, manager: PluginManager
) -> Device:
    """The card ``--device`` names: a target an installed plugin describes (``archs``) or the
    page names, an NVIDIA compute capability, or a target that an installed plugin claims."""
    if archdb.compute_capability(gfx) is not None:
        return device_for(gfx, archs=archs, seen_by=("--device",))
    arch = archs.of(gfx)
    if not arch.described_by and archdb.page_target(gfx) is None:
        device = device_for(gfx, archs=archs, integrated=integrated, seen_by=("--device",))
        if any(claim.score > 0 for _, claim in manager.claims(device)):
            return device
        known = dict.fromkeys([*archdb.PAGE, *archs.records])
        raise StrataError(
            f"--device {gfx}: not a target strata knows ({', '.join(known)}) nor one "
            "an installed plugin claims"
        )
    return device_for(
        arch.target,
        archs=archs,
        integrated=integrated or arch.integrated_only,
        evidence="--integrated" if integrated else None,
        seen_by=("--device",),
    )


def runnable_plugin(main: Assignment, chosen: str | None, manager: PluginManager) -> str:
    """The plugin that runs the main card; StrataError where none may, naming the card, its
    architecture and what the installed builds carry (AMD_HIP.md: "A binary carried to another
    card stops with the card's name, its architecture and the build's list")."""
    device = main.device
    if chosen and main.plugin != chosen:
        refusal = dict(main.claims).get(chosen)
        if refusal is not None:
            raise StrataError(
                f"{device.name} ({device.gfx}): STRATA_ARCH_PLUGIN={chosen}, which {refusal.reason}"
            )
    if main.plugin is None:
        carried = builds_carry(manager, device)
        notes = "".join(f"; {note}" for note in support_notes(device))
        notes += f"; {carried}" if carried else ""
        raise StrataError(f"{device.name} ({device.gfx}, {device.family}): {main.reason}{notes}")
    return main.plugin


def _ple_table_bytes(request: PlanRequest, config: run_config.RunConfig) -> int | None:
    if request.ple_table_gib is not None:
        return int(request.ple_table_gib * GIB)
    ple = parse_engine_args(config.args, {"--ple-gguf"}).get("--ple-gguf")
    found = request.recorder.stat(ple) if ple else None
    return found.st_size if found else None
