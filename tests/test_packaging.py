"""Versions in lockstep, and `strata[rdna4]` installed from the built wheels alone."""

import json
import subprocess
import tomllib
import venv
from pathlib import Path

import strata_core

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_DIRS = sorted((ROOT / "plugins").glob("*/pyproject.toml"))


def test_versions_move_in_lockstep():
    version = strata_core.__version__
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for extra, requirements in root["optional-dependencies"].items():
        if extra != "all":
            assert requirements[0].endswith(f"=={version}"), extra
    assert len(PLUGIN_DIRS) == 5
    for path in PLUGIN_DIRS:
        project = tomllib.loads(path.read_text())["project"]
        assert project["version"] == version, path
        assert project["dependencies"] == [f"strata=={version}"], path


def test_every_plugin_has_an_extra_and_an_entry_point():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    named = {r.split("==")[0] for reqs in extras.values() for r in reqs}
    for path in PLUGIN_DIRS:
        project = tomllib.loads(path.read_text())["project"]
        assert project["name"] in named
        assert list(project["entry-points"]["strata.arch"]) == [path.parent.name]


def test_strata_rdna4_installs_from_the_built_wheels_alone(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run(
        [str(ROOT / "scripts/build-wheels.sh"), str(dist)],
        check=True,
        capture_output=True,
        timeout=600,
    )
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
    assert set(names) == {"core", "kfd", "hip", "host", "hip_rdna4"}
    assert names["hip_rdna4"]["status"] == "active"
    assert names["hip_rdna4"]["distribution"] == "strata-hip-rdna4"
