"""The hooks that the core calls and plugins implement.

Every plugin is an object registered under its entry point name in the group
``strata.arch``; it must carry ``strata_api_version`` (an int, see
:data:`strata_core.api.manager.API_VERSION`) and may implement any of these hooks. The core
calls each implementation on its own: one that raises is reported by plugin name and
skipped, and the others still answer (``STRATA_STRICT_PLUGINS=1`` re-raises instead).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pluggy

from .arch import ArchRecord
from .records import (
    Claim,
    Detection,
    DetectionContext,
    Device,
    KernelChoice,
    KernelLibrary,
    RunContext,
    Workload,
)
from .switches import Defaults, Switch

PROJECT = "strata"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def strata_detect_devices(context: DetectionContext) -> Detection | None:
    """Report the GPUs this detector can see, or facts about GPUs others see.

    Contract:
    - read only what ``context`` names (its ``sysfs`` root and ``env`` mapping), so that
      tests can call it with a fake tree and environment;
    - never raise for bad input: a malformed or unreadable file becomes one line in
      ``Detection.problems`` that names the file (and line) and what is wrong;
    - load no native code in this process: a probe that could crash or hang runs in a
      subprocess with ``context.hip_timeout_s`` as its limit;
    - every :class:`DeviceReport` carries a PCI address (``dddd:bb:dd.f``) or a unique
      id, which is how reports about the same GPU are merged. For each fact, the HIP
      runtime's answer takes precedence over other detectors', which take precedence over
      KFD's, except memory sizes, where the kernel's DRM counters win.

    Return None when there is nothing to report.
    """


@hookspec
def strata_arch_targets() -> tuple[str, ...]:
    """The gfx targets (fnmatch patterns allowed) this plugin carries code for.

    Used for listing and for the hint given when no plugin runs a device. Must be cheap:
    no native code, no numpy.
    """
    raise NotImplementedError  # a spec: plugins implement it


@hookspec
def strata_arch_records() -> tuple[ArchRecord, ...]:
    """What each target this plugin carries code for is: one :class:`ArchRecord` a target.

    Contract:
    - facts of the target, not of one run: family and generation, wave size, matrix cores,
      the int8 dot instruction, LDS, whether it exists only integrated, the page's status and
      words where the page names it, and the marketing names of its cards by PCI device id;
    - the core decides from these facts (kernel choices, the prompt-GEMM library, the picture
      reader, where a switch applies, a card's name and kind), so that a new architecture
      needs no change to the core; a target no plugin describes gets a plain fallback, said
      as such;
    - where two plugins describe one target, the first registered is used and the other is
      named in one warning line;
    - cheap: data shipped in the plugin's package (``ArchPlugin`` reads ``arch.toml`` beside
      its module), no native code, no numpy.
    """
    raise NotImplementedError  # a spec: plugins implement it


@hookspec
def strata_claim_device(device: Device) -> Claim | None:
    """Say whether this plugin can run ``device``, with a specificity score, and why.

    Contract:
    - decide on ``device.gfx`` (the effective target, after HSA_OVERRIDE_GFX_VERSION) and
      ``device.wave_size`` alone, never on the device's index, PCI address, name or memory:
      the hook is asked once per distinct target and wave, and every device of that target
      and wave gets the answer;
    - a positive score claims the device; an exact target match scores 100, a pattern
      match less. The highest score wins; two plugins at the same highest score are a
      tie that ``STRATA_ARCH_PLUGIN`` (or the run config) must settle;
    - ``Claim.refuse(reason)`` (score 0) says why not, in a phrase that reads after the
      plugin's name, for example ``"is a wave32 build for gfx1100; gfx906 is wave64"``;
    - None means the plugin does not run GPUs at all (a pure detector).
    """


@hookspec
def strata_declare_switches() -> tuple[Switch, ...]:
    """The switches this plugin's build reads: engine environment variables and arguments.

    Contract:
    - the built-in ``core`` plugin declares the switches every build reads; an
      architecture plugin declares only those its own build adds (the gfx906 build's);
    - a name is declared once across the core and the plugin that runs a device;
    - ``Switch.values`` lists every value the engine accepts, so that anything else set
      by the user can be warned about (and kept: a user's value is never changed).
    """
    raise NotImplementedError  # a spec: plugins implement it


@hookspec
def strata_switch_defaults(device: Device, context: RunContext) -> Defaults | None:
    """The defaults this plugin gives for ``device`` in ``context``, each with its reason.

    Called for the built-in ``core`` plugin and for the plugin that runs the device.

    Contract:
    - give defaults only for declared switches; the resolver drops any other with a
      warning naming the plugin;
    - a default never overrides a value the user or the run config set: the resolver
      applies that rule, and ``context.given`` lets a rule depend on such values (the
      iGPU prompt set's STRATA_IGPU_PROMPT_SET, STRATA_PCIE_FRAC_DEFAULT=old);
    - ``Defaults.log`` holds the start lines the engine prints for these defaults,
      ``Defaults.warnings`` what the user should know before starting;
    - be a pure function of the arguments: no environment, no files.
    """


@hookspec
def strata_tuning_dirs(device: Device) -> tuple[Path, ...] | None:
    """The folders of tuning tables this plugin ships for ``device``, searched after the
    engine's own ``tuning/`` folder and ``$STRATA_TUNING_DIR``.

    Contract:
    - a folder may be missing or empty: a plugin ships only tables calibrated on its cards;
    - tables are named ``<arch>-hipblaslt-<version>.txt`` or ``<arch>-rocblas-<version>.txt``
      and are read with strata_core.tuning.tables; one with any error is refused whole;
    - called only for the plugin that runs the device.
    """


@hookspec
def strata_select_kernels(
    device: Device, context: RunContext, switches: Mapping[str, str | None], workload: Workload
) -> tuple[KernelChoice, ...] | None:
    """For each operation this plugin runs on ``device``, the variant to take, and why.

    Contract:
    - called only for the plugin that runs the device; ``switches`` holds every resolved
      switch value (None where unset), so a rule reads what the run will really have;
    - decide from the device's facts (``device.arch``, its :class:`ArchRecord`), the switches
      and the workload's shapes: WMMA attention only with int8 KV and STRATA_HIP_WMMA on (``auto``
      from STRATA_HIP_WMMA_MIN_Q queries), the top-k band by cell count, the fast or the
      old router;
    - one KernelChoice per operation; a reason that names the fact or switch that decided.
    """


@hookspec
def strata_kernel_library() -> KernelLibrary | None:
    """This plugin's HIP kernel library: the code objects its build made, one per target.

    Contract:
    - cheap and side-effect free: read the build manifest, load no native code;
    - ``KernelLibrary.targets`` are the targets the build was asked for, the same as
      ``strata_arch_targets``; a target without a code object (no suitable clang at build
      time, a compiler that failed) is absent from ``code_objects``, and ``problems`` says
      why, in lines `strata-core plugins` prints as they are;
    - None means the plugin runs nothing on the GPU by design (a detector, the host).
    """
