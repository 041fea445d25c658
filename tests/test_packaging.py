"""Versions in lockstep, and `strata[rdna4]` installed from the built wheels alone."""

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

import strata_core
from strata_core.api import manifest as manifest_module
from strata_core.cli.report import library_lines
from strata_core.hip import build_hook
from strata_core.testing import fake_gpu, write_sysfs

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_DIRS = sorted((ROOT / "plugins").glob("*/pyproject.toml"))


def test_versions_move_in_lockstep():
    version = strata_core.__version__
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for extra, requirements in root["optional-dependencies"].items():
        if extra != "all":
            assert requirements[0].endswith(f"=={version}"), extra
    (every,) = root["optional-dependencies"]["all"]
    members = every.removeprefix("strata[").removesuffix("]").split(",")
    assert sorted(members) == sorted(e for e in root["optional-dependencies"] if e != "all")
    for path in PLUGIN_DIRS:
        project = tomllib.loads(path.read_text())["project"]
        assert project["version"] == version, path
        assert project["dependencies"] == [f"strata=={version}"], path


def test_every_plugin_has_an_extra_and_an_entry_point():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    named = {r.split("==")[0] for e, reqs in extras.items() if e != "all" for r in reqs}
    plugins = set()
    for path in PLUGIN_DIRS:
        project = tomllib.loads(path.read_text())["project"]
        plugins.add(project["name"])
        assert list(project["entry-points"]["strata.arch"]) == [path.parent.name]
    assert plugins == named  # each plugin has its extra, and each extra is a plugin


def test_a_plugin_is_rebuilt_when_a_hip_compiler_appears():
    """uv rebuilds a plugin when one of its cache keys changes: every compiler the build hook
    may find is among them, so a plugin built before clang was installed is built again."""
    for path in PLUGIN_DIRS:
        keys = tomllib.loads(path.read_text())["tool"]["uv"]["cache-keys"]
        envs = {k["env"] for k in keys if "env" in k}
        files = [k["file"] for k in keys if "file" in k]
        assert {"STRATA_HIP_CLANG", "ROCM_PATH"} <= envs, path
        compilers = ["/opt/rocm/llvm/bin/clang", "/usr/bin/ld.lld-19"]
        compilers += [f"{folder}/{name}" for folder in ("/usr/bin", "/usr/local/bin")
                      for name in build_hook.CLANG_NAMES]  # fmt: skip
        for compiler in compilers:
            assert any(fnmatch.fnmatchcase(compiler, f) for f in files), (path, compiler)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    """Every wheel of the workspace, with the wheels they need (scripts/build-wheels.sh)."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [str(ROOT / "scripts/build-wheels.sh"), str(dist)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    return dist


def test_strata_rdna4_installs_from_the_built_wheels_alone(wheels, tmp_path):
    dist = wheels
    venv.create(tmp_path / "venv", with_pip=True)
    bin_dir = tmp_path / "venv/bin"
    subprocess.run(
        [
            str(bin_dir / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--find-links",
            str(dist),
            "strata[rdna4]",
        ],
        check=True,
        timeout=600,
    )
    listing = subprocess.run(
        [str(bin_dir / "strata-core"), "plugins", "--json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    names = {p["name"]: p for p in json.loads(listing.stdout)["plugins"]}
    assert set(names) == {"core", "kfd", "hip", "pci", "nvidia", "host", "hip_rdna4"}
    assert names["hip_rdna4"]["status"] == "active"
    assert names["hip_rdna4"]["distribution"] == "strata-hip-rdna4"
    library = names["hip_rdna4"]["kernel_library"]
    assert library["problems"] == []
    assert sorted(library["code_objects"]) == ["gfx1200", "gfx1201"]
    assert all(Path(p).is_file() and "site-packages" in p for p in library["code_objects"].values())


def test_the_install_hint_for_a_missing_plugin_is_a_command_that_works(wheels, tmp_path, env):
    """With strata[rdna4] alone, devices names the distribution an RX 7900 XTX needs and the
    command that installs it from the wheelhouse; that command, run in the checkout (dist/),
    installs it, and the card is then run."""
    dist = tmp_path / "checkout" / "dist"
    shutil.copytree(wheels, dist)
    venv.create(tmp_path / "venv", with_pip=True)
    bin_dir = tmp_path / "venv/bin"
    pip = [str(bin_dir / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--no-index", "--find-links", str(dist), "strata[rdna4]"],
                   check=True, timeout=600)  # fmt: skip
    tree = str(write_sysfs(tmp_path / "sys", [fake_gpu("gfx1100")]))
    devices = [str(bin_dir / "strata-core"), "devices", "--json", "--sysfs", tree]
    found = subprocess.run(devices, env=env, capture_output=True, text=True, timeout=60)
    (card,) = json.loads(found.stdout)["devices"]
    prefix = "no installed plugin runs gfx1100 (RDNA3): strata-hip-rdna3 is not installed "
    assert card["plugin"] is None and card["reason"].startswith(prefix)
    command = card["reason"].removeprefix(f"{prefix}(from a checkout: ").removesuffix(")")
    assert command == (
        "scripts/build-wheels.sh && pip install --no-index --find-links dist strata-hip-rdna3"
    )
    install = command.partition(" && ")[2].split()
    assert install[:2] == ["pip", "install"]
    subprocess.run([*pip, *install[2:]], cwd=dist.parent, check=True, timeout=600)
    (card,) = json.loads(
        subprocess.run(devices, env=env, capture_output=True, text=True, timeout=60).stdout
    )["devices"]
    assert card["plugin"] == "hip_rdna3"


def _build(plugin: str, out: Path, env: dict[str, str] | None = None, *flags: str) -> None:
    subprocess.run(
        [shutil.which("uv"), "build", "--python", sys.executable, "--no-sources", *flags,
         "--out-dir", str(out), str(ROOT / "plugins" / plugin)],
        check=True, capture_output=True, timeout=600, env=env,
    )  # fmt: skip


def _manifest(wheel: Path) -> tuple[dict, list[str]]:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        manifest = next(n for n in names if n.endswith("/kernels/build.json"))
        return json.loads(archive.read(manifest)), names


def test_a_plugin_sdist_builds_its_code_objects_on_its_own(tmp_path):
    _build("hip_rdna2", tmp_path)  # the sdist first, then the wheel from the sdist alone
    (sdist,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[1]: m for m in archive.getmembers()}
    assert members["hip_build.py"].isfile()
    sources = {f"native/gpu/{path.name}" for path in (ROOT / "native/gpu").iterdir()}
    assert sources | {"native/include/strata_kernels.h"} <= set(members)
    assert not any(name.endswith(".hsaco") for name in members)
    (wheel,) = tmp_path.glob("*.whl")
    manifest, names = _manifest(wheel)
    assert manifest["code_objects"] == {
        "gfx1030": "strata_kernels-gfx1030.hsaco",
        "gfx1031": "strata_kernels-gfx1031.hsaco",
    }
    assert "strata_hip_rdna2/kernels/strata_kernels-gfx1031.hsaco" in names


def test_a_build_without_clang_says_so_and_carries_no_code_objects(tmp_path):
    bare = os.environ | {"PATH": str(Path(shutil.which("uv")).parent)}
    assert not any(shutil.which(name, path=bare["PATH"]) for name in ("clang", "clang-19"))
    _build("gfx906", tmp_path, bare, "--wheel")
    (wheel,) = tmp_path.glob("*.whl")
    manifest, names = _manifest(wheel)
    assert manifest["code_objects"] == {} and not any(n.endswith(".hsaco") for n in names)
    assert manifest["problem"].startswith("built without a HIP compiler")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path / "site")
    library = manifest_module.load(tmp_path / "site/strata_gfx906/kernels")
    assert library_lines("gfx906", library) == [
        "gfx906: no code object for gfx906: nothing runs on those GPUs (the host backend runs "
        "instead)",
        f"gfx906: {manifest['problem']}",
    ]


EXAMPLES = ROOT / "examples"


class InstalledExample:
    """An example plugin installed into a fresh environment beside strata's wheels, built by
    strata's strata-kernels hook; its commands run there as a user's would."""

    def __init__(self, name: str, wheels: Path, tmp_path: Path, env: dict[str, str]) -> None:
        self.source, self.env = EXAMPLES / name, env
        venv.create(tmp_path / "venv")
        self.bin = tmp_path / "venv/bin"
        install = [shutil.which("uv"), "pip", "install", "--quiet", "--python", str(self.python)]
        for args in (
            ["--no-index", "--find-links", str(wheels), "strata"],
            ["hatchling>=1.26", "pytest"],
            ["--no-index", "--no-build-isolation", "--no-deps", str(self.source)],
        ):
            subprocess.run([*install, *args], check=True, capture_output=True, timeout=600)

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def strata_core(self, *args: str) -> subprocess.CompletedProcess:
        command = [str(self.bin / "strata-core"), *args]
        return subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=120)

    def plugin(self, name: str) -> dict:
        """The plugin's row of `plugins --json`, which `plugins --check` finds conforming."""
        listing = json.loads(self.strata_core("plugins", "--json").stdout)["plugins"]
        (row,) = [p for p in listing if p["name"] == name]
        assert self.strata_core("plugins", "--check").stdout.splitlines() == [f"{name}: conforms"]
        return row

    def own_tests(self) -> str:
        """The example's own tests, which use only the kit (the pytest plugin's fixtures and
        strata_core.testing); they must pass."""
        done = subprocess.run(
            [str(self.python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
             str(self.source / "tests")],
            env=self.env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout
        return done.stdout


def test_a_third_party_plugin_written_with_the_kit(wheels, tmp_path, env):
    """examples/strata-rx6600 in a fresh environment: found by every command with no change to
    the core, and passing its own tests."""
    example = InstalledExample("strata-rx6600", wheels, tmp_path, env)
    rx6600 = example.plugin("rx6600")
    assert (rx6600["distribution"], rx6600["status"], rx6600["archs"]) == (
        "strata-rx6600",
        "active",
        ["gfx1032"],
    )
    assert list(rx6600["kernel_library"]["code_objects"]) == ["gfx1032"]

    root = write_sysfs(tmp_path / "sys", [fake_gpu("gfx1032", vram_gib=8)])
    scan = ("--no-hip", "--sysfs", str(root))
    devices = json.loads(example.strata_core("devices", "--json", *scan).stdout)
    assert [(d["gfx"], d["plugin"]) for d in devices["devices"]] == [("gfx1032", "rx6600")]
    plan = json.loads(example.strata_core("plan", "--json", *scan).stdout)
    assert plan["plugin"] == "rx6600"
    assert plan["switches"]["STRATA_MTP_SIDE_STREAM"]["source"] == "arch-default"
    assert "5 passed" in example.own_tests()


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv runs the project's commands")
def test_uv_run_does_not_compile_bytecode_each_time():
    """scripts/setup.sh compiles the environment's bytecode once; `uv run` does not again."""
    done = subprocess.run(
        ["uv", "run", "--locked", "strata-core", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "Bytecode compiled" not in done.stderr
    assert "uv sync --locked --compile-bytecode" in (ROOT / "scripts/setup.sh").read_text()


def test_a_third_party_plugin_for_a_target_the_core_knows_nothing_of(wheels, tmp_path, env):
    """examples/strata-mi300x in a fresh environment: a plugin for gfx942 (CDNA3, wave64,
    MFMA), which neither the core nor AMD_HIP.md names; what the card is comes from the
    plugin's arch.toml alone, and every command says so with no change to the core."""
    example = InstalledExample("strata-mi300x", wheels, tmp_path, env)
    mi300x = example.plugin("mi300x")
    assert (mi300x["distribution"], mi300x["status"], mi300x["archs"]) == (
        "strata-mi300x",
        "active",
        ["gfx942"],
    )
    assert list(mi300x["kernel_library"]["code_objects"]) == ["gfx942"]

    root = write_sysfs(tmp_path / "sys", [fake_gpu("gfx942", vram_gib=192, device_id=0x74A1)])
    scan = ("--no-hip", "--sysfs", str(root))
    (card,) = json.loads(example.strata_core("devices", "--json", *scan).stdout)["devices"]
    assert (card["gfx"], card["plugin"], card["name"]) == ("gfx942", "mi300x", "Instinct MI300X")
    assert (card["family"], card["matrix_cores"], card["wave_size"]) == ("CDNA3", "MFMA", 64)
    assert card["status"] == "not on the page; described by mi300x"
    devices = example.strata_core("devices", *scan).stdout.splitlines()
    assert devices[1].split()[2:6] == ["Instinct", "MI300X", "gfx942", "CDNA3"]
    assert devices[2] == (
        "      not on the page; described by mi300x; MFMA matrix cores; mi300x carries code for "
        "gfx942"
    )
    plan = example.strata_core("plan", *scan)
    assert plan.stdout.splitlines()[0] == (
        "plan for HIP 0: Instinct MI300X (gfx942, CDNA3, discrete) on Linux"
    )
    for shown in ("\n".join(devices), plan.stdout + plan.stderr):
        assert "unknown" not in shown and "not in the architecture database" not in shown
    answer = json.loads(example.strata_core("plan", "--json", *scan).stdout)
    assert answer["plugin"] == "mi300x"
    assert answer["kernels"]["prompt_attention"]["reason"] == (
        "gfx942's matrix cores are MFMA; the engine's matrix-core attention is written for WMMA"
    )
    assert answer["switches"]["STRATA_MTP_SIDE_STREAM"]["source"] == "arch-default"
    assert "5 passed" in example.own_tests()
