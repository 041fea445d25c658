from __future__ import annotations

import functools
import itertools
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from strata_core import log
from strata_core.api.manager import PluginManager
from strata_core.api.records import DetectionContext
from strata_core.errors import StrataError
from strata_core.host.library import HostLibrary
from strata_core.host.platform import KERNEL_ISAS
from strata_core.plan.devices import DeviceScan, scan
from strata_core.testing.pytest_plugin import clean_environment
from strata_core.testing.sysfs import write_sysfs


def _cpu_host_isas() -> tuple[str, tuple[str, ...]]:
    """The instruction set the host library starts with, and every one it runs on this CPU
    (each by its own flags: an AVX-512 VNNI CPU may lack AVX-VNNI)."""
    lib = HostLibrary()
    best, has = lib.isa, []
    for isa in HOST_ISAS:
        try:
            lib.set_isa(isa)
        except StrataError:
            continue
        has.append(isa)
    lib.set_isa(best)
    return best, tuple(has)


#: the host kernels' instruction sets, lowest first, and those this CPU has: a test that
#: depends on one names it and runs on each of these
HOST_ISAS = tuple(name for name, _ in reversed(KERNEL_ISAS))
BEST_HOST_ISA, CPU_HOST_ISAS = _cpu_host_isas()


@pytest.fixture(params=CPU_HOST_ISAS)
def host_isa(request) -> str:
    """Each instruction set this CPU runs the host kernels with (STRATA_HOST_ISA)."""
    return request.param


@pytest.fixture(autouse=True)
def default_log(monkeypatch):
    """Each test starts with the log at its default level and format, whatever a command run
    in this process before it set, and with no terminal width (xdist's workers get
    COLUMNS=80): a test that wraps says its width."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    log.configure()


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    """The process environment without any GPU runtime or strata variable, with the answer
    cache and strata's data folder (where tune writes tables, and plans look) in this test's
    own folder (the HIP probe stays on)."""
    return clean_environment(tmp_path / "answer-cache") | {"XDG_DATA_HOME": str(tmp_path / "data")}


@pytest.fixture
def machine(tmp_path, env):
    """Detect the devices of a fake machine: ``machine([RX_7900_XTX], **extra_env)``."""

    trees = itertools.count()

    def detect(gpus, cpu_nodes=1, **extra_env) -> tuple[DeviceScan, PluginManager]:
        root = write_sysfs(tmp_path / f"sys{next(trees)}", gpus, cpu_nodes)
        full_env = env | extra_env
        manager = PluginManager.discover(full_env)
        context = DetectionContext(sysfs=root, env=full_env, hip_probe=False)
        return scan(manager, context), manager

    return detect


ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
STAND_IN = FIXTURES / "hip_stand_in.c"
#: the BLAS libraries' stand-ins, linked into the runtime's (STRATA_CUBLASLT_LIBRARY and the
#: like name the same file)
BLAS_STAND_IN = FIXTURES / "blas_stand_in.c"
NVML_STAND_IN = FIXTURES / "nvml_stand_in.c"


@pytest.fixture(scope="session")
def stand_in(tmp_path_factory) -> str:
    library = tmp_path_factory.mktemp("hip") / "libamdhip64.so.7"
    subprocess.run(
        [
            shutil.which("cc") or "gcc",
            "-shared",
            "-fPIC",
            "-o",
            str(library),
            str(STAND_IN),
            str(BLAS_STAND_IN),
        ],
        check=True,
    )
    return str(library)


@pytest.fixture(scope="session")
def nvml_stand_in(tmp_path_factory) -> str:
    """The stand-in NVML of tests/fixtures/nvml_stand_in.c (its cards: STAND_IN_NVML_CARDS)."""
    library = tmp_path_factory.mktemp("nvml") / "libnvidia-ml.so.1"
    subprocess.run(
        [shutil.which("cc") or "gcc", "-shared", "-fPIC", "-o", str(library), str(NVML_STAND_IN)],
        check=True,
    )
    return str(library)


#: the calls of the runtimes a test meets, as the stand-in is built for each: the newest; a
#: CUDA 11.8 driver's (520, the oldest the PTX takes: no cuLaunchKernelEx); and only those a
#: plain run needs (a HIP runtime or CUDA driver without graph calls either)
CALL_SETS = {
    "newest": (),
    "cuda-11.8": ("-DSTAND_IN_WITHOUT_LAUNCH_EX",),
    "plain": ("-DSTAND_IN_WITHOUT_GRAPHS", "-DSTAND_IN_WITHOUT_LAUNCH_EX"),
}


@pytest.fixture(scope="session")
def emulating_stand_ins(tmp_path_factory) -> Callable[[str], str]:
    """The stand-in whose launches compute (the HIP source run on the CPU), built for one of
    CALL_SETS when a test first asks for it: ``emulating_stand_ins("plain")``."""
    clang = shutil.which("clang-19")
    assert clang, "clang-19 is missing (Debian: apt-get install clang-19)"
    folder = tmp_path_factory.mktemp("hip-emulated")
    includes = [f"-I{ROOT / 'native/include'}", f"-I{ROOT / 'native/gpu'}", f"-I{FIXTURES}"]

    def compiled(source: Path, output: str, *flags: str) -> str:
        subprocess.run(
            [clang, "-c", "-fPIC", "-O1", *flags, str(source), "-o", str(folder / output)],
            check=True,
        )
        return str(folder / output)

    shared = [
        compiled(FIXTURES / "hip_emulation.cpp", "emulation.o", "-x", "c++", "-std=c++17",
                 "-fno-exceptions", "-fno-rtti", *includes),
        compiled(BLAS_STAND_IN, "blas.o"),
    ]  # fmt: skip

    @functools.cache
    def build(calls: str) -> str:
        stand_in = compiled(
            STAND_IN, f"stand_in-{calls}.o", "-DSTAND_IN_EMULATE", *CALL_SETS[calls]
        )
        library = folder / calls / "libamdhip64.so.7"
        library.parent.mkdir()
        subprocess.run(
            [clang, "-shared", stand_in, *shared, "-o", str(library), "-lstdc++", "-lpthread"],
            check=True,
        )
        return str(library)

    return build


@pytest.fixture(scope="session")
def emulating_stand_in(emulating_stand_ins) -> str:
    """The emulating stand-in with the newest runtimes' calls."""
    return emulating_stand_ins("newest")


@pytest.fixture
def with_driver(nvml_stand_in):
    """The environment of a PC whose NVIDIA driver is the stand-ins' (NVML, CUDA driver,
    cuBLASLt), an H200 by default."""

    def environment(env, library, **more):
        driver = {
            "STRATA_CUDA_PROBE": "1",
            "STRATA_NVML_LIBRARY": nvml_stand_in,
            "STRATA_CUDA_LIBRARY": library,
            "STRATA_CUBLASLT_LIBRARY": library,
            "STAND_IN_ARCH": "sm_90",
        }
        return env | driver | more

    return environment
