"""The walk of `strata-core run` through the layers (issue 23), read from the calls a run makes:
each call from one strata_core module into another, the layer of each (tests/test_layers.py
draws them), and the calls that climb to a higher layer. Two walks: `run --json` on the host
backend, in this process (a sysfs tree with no GPU), and with --cuda-driver LIBRARY the GPU
child's part on an NVIDIA card (open the card through the backend registry, launch
matvec_q8_0), which must touch no strata_core.hip module.

    python bench/run_walk.py [--cuda-driver LIBCUDA]
(the tests' stand-in, tests/fixtures/hip_stand_in.c built as a shared library, with
STAND_IN_ARCH=sm_90, does for a PC without an NVIDIA card)
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

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import test_layers  # noqa: E402 - the layer map

PACKAGE = test_layers.PACKAGE
Call = tuple[str, str]


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
            calls.append((caller, callee))

    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(None)


def report(title: str, calls: list[Call]) -> None:
    def floor(module: str) -> int | None:
        layer = test_layers.room(module)
        return test_layers.floor(layer) if layer else None

    climbs = collections.Counter(
        (a, b) for a, b in calls if (fa := floor(a)) is not None and (fb := floor(b)) is not None
        and fb > fa
    )  # fmt: skip
    entered = collections.Counter(test_layers.room(b) for a, b in calls)
    modules = {m for call in calls for m in call}
    print(f"{title}: {len(modules)} modules, {len(calls)} calls between them, "
          f"{sum(climbs.values())} climbs to a higher layer")  # fmt: skip
    print("  calls into each layer:", dict(entered.most_common()))
    for (a, b), n in climbs.most_common():
        print(f"  climb {a} -> {b}: {n}")
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
