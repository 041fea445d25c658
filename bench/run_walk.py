"""The walk of `strata-core run` through the layers (issue 23), read from the calls a run makes:
each call from one strata_core module into another, the layer of each (tests/test_layers.py
draws them), the calls that climb to a higher layer, the hook calls among them (the plugin
manager calling a hook where a layer implements it), and the re-entries: calls into a layer
already on the stack below the caller, where the walk comes back to a floor it had left. Two
walks: `run --json` on the host backend, in this process (a sysfs tree with no GPU), and with
--cuda-driver LIBRARY the GPU child's part on an NVIDIA card (open the card through the
backend registry, launch matvec_q8_0), which must touch no strata_core.hip module.

    python bench/run_walk.py [--cuda-driver LIBCUDA]
(the tests' stand-in, tests/fixtures/hip_stand_in.c built as a shared library, with
STAND_IN_ARCH=sm_90, does for a PC without an NVIDIA card)

Measured when the notes of a run stopped calling back into cli and the standard streams left
the launcher for strata_core.streams (before -> after): the host run's climbs 10 -> 7, all of
them hook calls (4 into host.plugin, 3 into plan.core_switches); re-entries 8 -> 5 (3 of them
hook calls). When a launch's "extra" array moved into gpu.library.Launch (the runtime takes
it finished): the CUDA walk's re-entries 1 -> 0, no hip module touched.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import attrs
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import test_layers  # noqa: E402 - the layer map

from strata_core.api import hookspec  # noqa: E402

PACKAGE = test_layers.PACKAGE
#: the plugin hooks, which the plugin manager calls in whichever layer implements them
HOOKS = frozenset(
    name
    for name, value in vars(hookspec).items()
    if name.startswith("strata_") and getattr(value, "__module__", None) == hookspec.__name__
)


@attrs.frozen
class Call:
    """A call from one strata_core module into another: the function called, and whether
    its layer was already on the stack below the caller (the walk comes back into it)."""

    caller: str
    callee: str
    function: str
    reentry: bool

    @property
    def hook(self) -> bool:
        return self.caller == "strata_core.api.manager" and self.function in HOOKS


def _module(code: CodeType, known: dict[str, str | None]) -> str | None:
    name = code.co_filename
    if name not in known:
        try:
            inside = Path(name).resolve().relative_to(PACKAGE)
            parts = ["strata_core", *inside.with_suffix("").parts]
        except ValueError:
            known[name] = None
        else:
            known[name] = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return known[name]


def _layers_below(frame: FrameType | None, known: dict[str, str | None]) -> set[str | None]:
    layers = set()
    while frame is not None:
        if module := _module(frame.f_code, known):
            layers.add(test_layers.room(module))
        frame = frame.f_back
    return layers


@contextlib.contextmanager
def traced() -> Iterator[list[Call]]:
    """The calls made inside the block from one strata_core module into another."""
    calls: list[Call] = []
    known: dict[str, str | None] = {}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_back is None:
            return
        callee, caller = _module(frame.f_code, known), _module(frame.f_back.f_code, known)
        if callee and caller and callee != caller:
            layer = test_layers.room(callee)
            back = layer != test_layers.room(caller) and layer in _layers_below(
                frame.f_back.f_back, known
            )
            calls.append(Call(caller, callee, frame.f_code.co_name, back))

    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(None)


def report(title: str, calls: list[Call]) -> None:
    def floor(module: str) -> int | None:
        layer = test_layers.room(module)
        return test_layers.floor(layer) if layer else None

    climbs = [
        c for c in calls if (fa := floor(c.caller)) is not None
        and (fb := floor(c.callee)) is not None and fb > fa
    ]  # fmt: skip
    entered = collections.Counter(test_layers.room(c.callee) for c in calls)
    modules = {m for c in calls for m in (c.caller, c.callee)}
    reentries = [c for c in calls if c.reentry]
    print(f"{title}: {len(modules)} modules, {len(calls)} calls between them, "
          f"{len(climbs)} climbs to a higher layer ({sum(c.hook for c in climbs)} of them hook "
          f"calls), {len(reentries)} re-entries into a layer already on the stack "
          f"({sum(c.hook for c in reentries)} of them hook calls)")  # fmt: skip
    print("  calls into each layer:", dict(entered.most_common()))
    up = collections.Counter((c.caller, c.callee, c.hook) for c in climbs)
    for (a, b, hook), n in up.items():
        print(f"  climb {a} -> {b}: {n}{' (hook calls)' if hook else ''}")
    back = collections.Counter((c.caller, c.callee, c.function) for c in reentries)
    for (a, b, function), n in back.items():
        print(f"  re-entry {a} -> {b}.{function}: {n}")
    hip = sorted(m for m in modules if m.startswith("strata_core.hip"))
    print("  strata_core.hip modules:", ", ".join(hip) or "none")


def host_walk(profile: Path) -> list[Call]:
    from strata_core.launcher import main
    from strata_core.testing.sysfs import write_sysfs

    with tempfile.TemporaryDirectory() as folder:
        root = write_sysfs(Path(folder) / "sys", [])
        argv = ["run", "--json", "--profile", str(profile), "--sysfs", str(root)]
        with traced() as calls, contextlib.redirect_stdout(io.StringIO()):
            main(argv)
    return calls


def cuda_walk(driver: str) -> list[Call]:
    from strata_core.api import PluginManager
    from strata_core.run.gpu_backend import GpuCard, open_gpu

    env = dict(os.environ, STRATA_CUDA_LIBRARY=driver)
    library = PluginManager.discover(env).kernel_libraries(["cuda"])["cuda"]
    card = GpuCard("cuda", "cuda", library, 0, (driver,))
    qs, d = np.zeros((64, 64), np.int8), np.ones((64, 2), np.float16)
    xq, xd = np.zeros(64, np.int8), np.ones(2, np.float32)
    with traced() as calls:
        open_gpu(card).kernels.matvec_q8_0(qs, d, xq, xd)
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", type=Path, default=ROOT / "tests/fixtures/profiles/tiny.toml")
    parser.add_argument("--cuda-driver", help="a libcuda (the tests' stand-in will do)")
    args = parser.parse_args()
    os.environ.update(STRATA_CACHE="0", STRATA_HIP_PROBE="0", STRATA_CUDA_PROBE="0")
    report("run on the host", host_walk(args.profile))
    if args.cuda_driver:
        report("open and launch on an NVIDIA card", cuda_walk(args.cuda_driver))


if __name__ == "__main__":
    main()
