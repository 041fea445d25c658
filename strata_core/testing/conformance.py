"""check_plugin: an architecture plugin held against every hook contract of hookspec.py, the
page's catalogue of targets, its own architecture records and the kernel ABI. `strata-core
plugins --check` runs it on the installed plugins; plugin authors run it in their tests
(strata_core.testing)."""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Callable, Iterator

from .. import archdb
from ..api.arch import Architectures
from ..api.manager import PluginManager, PluginStatus
from ..api.records import Claim, Device, RunContext, Workload
from ..api.switches import Switch
from ..api.vocabulary import NATIVE_PACKS, OS_NAMES
from ..errors import StrataError
from ..gpu.backends import of_vendor
from ..plan.devices import device_for
from ..plan.plan import CORE, declarations

#: The contexts every default and kernel choice is asked for: each OS, with and without
#: int8 KV, with and without a native pack.
CONTEXTS = tuple(
    RunContext(os=os_name, kv=kv, pack=pack)
    for os_name, kv, pack in itertools.product(OS_NAMES, (None, "int8"), (None, NATIVE_PACKS[0]))
)


def check_plugin(plugin: object, name: str = "plugin") -> list[str]:
    """Every way ``plugin`` breaks a hook contract, one line each; empty when it conforms."""
    manager = PluginManager.holding({name: plugin})
    return list(_Checker(manager, name).problems())


class _Checker:
    def __init__(self, manager: PluginManager, name: str) -> None:
        self.manager, self.name = manager, name
        self.archs = Architectures(manager.arch_records())
        #: every target the page names or the plugin describes
        self.known = list(dict.fromkeys([*archdb.PAGE, *self.archs.records]))

    def _device(self, target: str, wave_size: int | None = None) -> Device:
        return device_for(target, archs=self.archs, wave_size=wave_size)

    def _claim(self, device: Device) -> Claim | None:
        return dict(self.manager.claims(device)).get(self.name)

    def _broken(self) -> str | None:
        record = self.manager.records[self.name]
        return None if record.status is PluginStatus.ACTIVE else record.why

    def problems(self) -> Iterator[str]:
        if why := self._broken():
            yield why
            return
        targets = self.manager.records[self.name].targets
        if not targets:
            yield "strata_arch_targets names no target"
        checks: tuple[Callable[[tuple[str, ...]], Iterator[str]], ...] = (
            self._records,
            self._switches,
            self._claims,
            self._defaults_and_kernels,
            self._kernel_library,
            self._tables,
        )
        for check in checks:
            yield from check(targets)
            if why := self._broken():
                yield why
                return

    def _covered(self, targets: tuple[str, ...]) -> list[Device]:
        known = [t for t in self.known if any(fnmatch.fnmatchcase(t, p) for p in targets)]
        unknown = [t for t in targets if t not in self.known and not _is_pattern(t)]
        return [self._device(t) for t in known + unknown]

    def _records(self, targets: tuple[str, ...]) -> Iterator[str]:
        """A plugin of API 2 describes every AMD target it carries code for (an NVIDIA card
        is its compute capability)."""
        if self.manager.records[self.name].api_version == 1:
            return
        for device in self._covered(targets):
            backend = of_vendor(device.vendor)
            if backend is not None and not backend.described_targets:
                continue
            if device.arch is None or device.arch.described_by != self.name:
                yield (
                    f"carries code for {device.gfx} but does not describe it "
                    "(strata_arch_records: an arch.toml table for it)"
                )

    def _switches(self, targets: tuple[str, ...]) -> Iterator[str]:
        _, warnings = declarations(self.manager, (CORE, self.name))
        yield from warnings
        for _, declared in self.manager.switch_declarations((self.name,)):
            yield from self._switch_problems(declared)

    def _switch_problems(self, declared: tuple[Switch, ...]) -> Iterator[str]:
        for switch in declared:
            if not switch.values:
                yield f"{switch.name} is declared with no accepted values"
            if not (switch.name.startswith("STRATA_") or switch.is_arg):
                yield f"{switch.name} is neither a STRATA_* variable nor an engine --argument"

    def _claims(self, targets: tuple[str, ...]) -> Iterator[str]:
        covered = {d.gfx for d in self._covered(targets)}
        for target in [*self.known, *(t for t in covered if t not in self.known)]:
            device = self._device(target)
            claim = self._claim(device)
            claimed = claim is not None and claim.score > 0
            if target in covered and not claimed:
                why = claim.reason if claim else "no answer"
                yield f"lists {target} among its targets but does not claim it: {why}"
            elif target not in covered and claimed:
                yield f"claims {target}, which is not among its targets {', '.join(targets)}"
            if target in covered and claimed and device.wave_size is not None:
                other = self._device(target, wave_size=96 - device.wave_size)
                if (c := self._claim(other)) and c.score > 0:
                    yield (
                        f"claims {target} as a wave{other.wave_size} card; a "
                        f"wave{device.wave_size} build must refuse it"
                    )

    def _defaults_and_kernels(self, targets: tuple[str, ...]) -> Iterator[str]:
        switches, _ = declarations(self.manager, (CORE, self.name))
        for device, context in itertools.product(self._covered(targets), CONTEXTS):
            where = f"{device.gfx} ({context.os}, kv {context.kv}, pack {context.pack})"
            answers = self.manager.switch_defaults((self.name,), device, context)
            for default in (d for _, answer in answers for d in answer.values):
                switch = switches.get(default.name)
                if switch is None:
                    yield (
                        f"gives a default for {default.name}, which no plugin declares, on {where}"
                    )
                elif not switch.accepts(default.value):
                    yield (
                        f"gives {default.name}={default.value} on {where}; {default.name} "
                        f"accepts {', '.join(switch.values)}"
                    )
            choices = self.manager.kernel_choices(
                self.name, device, context, dict.fromkeys(switches), Workload()
            )
            ops = [c.op for c in choices]
            if len(set(ops)) != len(ops):
                yield f"strata_select_kernels chooses an operation twice on {where}: {ops}"
            if any(not c.variant or not c.reason for c in choices):
                yield f"strata_select_kernels gives a choice without a variant or reason on {where}"

    def _kernel_library(self, targets: tuple[str, ...]) -> Iterator[str]:
        from ..gpu.backends import read_code
        from ..gpu.library import launch_problems

        library = self.manager.kernel_libraries((self.name,)).get(self.name)
        if library is None:
            return
        if set(library.targets) != set(targets):
            yield (
                f"its kernel library is built for {', '.join(library.targets) or 'nothing'}; it "
                f"claims {', '.join(targets)}"
            )
        yield from (f"kernel library: {problem}" for problem in library.problems)
        for target, path in library.code_objects.items():
            try:
                code = read_code(path)
            except StrataError as exc:
                yield str(exc)
                continue
            arch = self.archs.of(target)
            yield from launch_problems(code, target)
            if arch.wave_size and code.wavefront_sizes != {arch.wave_size}:
                yield f"{path.name} is wave{code.wavefront_sizes}; {target} is wave{arch.wave_size}"

    def _tables(self, targets: tuple[str, ...]) -> Iterator[str]:
        from ..tuning import tables

        seen = set()
        for device in self._covered(targets):
            for folder in self.manager.tuning_dirs(self.name, device):
                for path in sorted(folder.glob("*.txt")) if folder.is_dir() else ():
                    if path in seen:
                        continue
                    seen.add(path)
                    try:
                        tables.read(path)
                    except tables.TableError as exc:
                        yield from exc.problems
                    arch = path.name.split("-", 1)[0]
                    if not any(fnmatch.fnmatchcase(arch, p) for p in targets):
                        yield f"{path} is a table for {arch}, which this plugin does not run"


def _is_pattern(target: str) -> bool:
    return any(ch in target for ch in "*?[")
