"""A base for architecture plugins: the targets' facts from the package's ``arch.toml``, claims
from a target list and a wave size, switch declarations and default rules from tables."""

from __future__ import annotations

import fnmatch
import functools
import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from ..archdb import VENDOR_NAMES, vendor_of
from .arch import ArchRecord, load_records
from .hookspec import hookimpl
from .kernels import hip_choices
from .records import Claim, Device, KernelChoice, KernelLibrary, RunContext, Workload
from .switches import Defaults, Rule, Switch, apply_rules

EXACT_MATCH = 100
PATTERN_MATCH = 50


class ArchPlugin:
    """Subclass it, set ``wave_size``, and declare ``strata_api_version``; ``switches`` are
    the switches only this plugin's build reads, ``rules`` its defaults. The kernel library is
    read from ``kernels/build.json`` beside the subclass's module, and the targets are the
    ones the build hook's ``targets`` option named there (set ``targets`` only for a plugin
    without a kernel build). What each target is comes from ``arch.toml`` beside the module,
    one table per target (:class:`~strata_core.api.arch.ArchRecord`'s fields).

    The API version is not inherited on purpose: each plugin states the version it was
    written against, and the manager checks it.
    """

    targets: ClassVar[tuple[str, ...]] = ()
    wave_size: ClassVar[int] = 32
    switches: ClassVar[tuple[Switch, ...]] = ()
    rules: ClassVar[tuple[Rule, ...]] = ()

    @functools.cached_property
    def carried_targets(self) -> tuple[str, ...]:
        """``targets``, else the targets its kernel build was made for."""
        return self.targets or self.strata_kernel_library().targets

    @hookimpl
    def strata_arch_targets(self) -> tuple[str, ...]:
        return self.carried_targets

    @functools.cached_property
    def arch_records(self) -> tuple[ArchRecord, ...]:
        """The records of ``arch.toml`` beside the module (none where there is no such file)."""
        path = self.package_dir / "arch.toml"
        return load_records(path) if path.is_file() else ()

    @hookimpl
    def strata_arch_records(self) -> tuple[ArchRecord, ...]:
        return self.arch_records

    @hookimpl
    def strata_claim_device(self, device: Device) -> Claim:
        targets = self.carried_targets
        if not targets:
            return Claim.refuse(f"names no target: {self._no_targets()}")
        vendors = {vendor_of(t) for t in targets}
        if device.vendor in VENDOR_NAMES and device.vendor not in vendors:
            carried = " and ".join(VENDOR_NAMES[v] for v in sorted(vendors))
            return Claim.refuse(
                f"carries code for {carried} GPUs; {device.gfx} is an "
                f"{VENDOR_NAMES[device.vendor]} target"
            )
        if device.wave_size is not None and device.wave_size != self.wave_size:
            return Claim.refuse(
                f"is a wave{self.wave_size} build for {', '.join(targets)}; "
                f"{device.gfx} is wave{device.wave_size}"
            )
        if device.gfx in targets:
            return Claim(EXACT_MATCH, f"carries code for {device.gfx}")
        for pattern in targets:
            if fnmatch.fnmatchcase(device.gfx, pattern):
                return Claim(PATTERN_MATCH, f"carries code for {pattern}")
        return Claim.refuse(f"carries code for {', '.join(targets)}, not {device.gfx}")

    def _no_targets(self) -> str:
        problems = self.strata_kernel_library().problems
        return problems[0] if problems else "its kernel build lists none"

    @property
    def package_dir(self) -> Path:
        return Path(inspect.getfile(type(self))).parent

    @hookimpl
    def strata_tuning_dirs(self, device: Device) -> tuple[Path, ...]:
        return (self.package_dir / "tuning",)

    @hookimpl
    def strata_kernel_library(self) -> KernelLibrary:
        from . import manifest

        return manifest.load(self.package_dir / "kernels")

    @hookimpl
    def strata_select_kernels(
        self,
        device: Device,
        context: RunContext,
        switches: Mapping[str, str | None],
        workload: Workload,
    ) -> tuple[KernelChoice, ...]:
        return hip_choices(device, context, switches, workload)

    @hookimpl
    def strata_declare_switches(self) -> tuple[Switch, ...]:
        return self.switches

    @hookimpl
    def strata_switch_defaults(self, device: Device, context: RunContext) -> Defaults:
        return Defaults(apply_rules(self.rules, device, context))
