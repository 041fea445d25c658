"""The example machines strata ships (--sysfs example:NAME): a plan for a card without the
card, from the command line alone."""

import json
from functools import partial

import pytest
from cli_runner import strata_core

from strata_core.detect.examples import EXAMPLES

run = partial(strata_core, check=False)

#: each example's cards as `devices --json` lists them: (HIP number, target, integrated)
CARDS = {
    "r9700-780m": [(0, "gfx1201", False), (1, "gfx1103", True)],
    "rdna3-pair": [(0, "gfx1100", False), (1, "gfx1101", False)],
    "780m": [(0, "gfx1103", True)],
    "gfx906-pair": [(0, "gfx906", False), (1, "gfx906", False)],
    "h200-r9700": [(0, "gfx1201", False), (0, "sm_unknown", False)],  # CUDA 0: PCI order
}


def test_every_example_is_described():
    assert set(CARDS) == set(EXAMPLES)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_each_example_is_a_machine_devices_reads(env, name):
    answer = json.loads(
        strata_core("devices", "--json", "--sysfs", f"example:{name}", env=env).stdout
    )
    cards = [(d["index"], d["gfx"], d["integrated"]) for d in answer["devices"]]
    assert cards == CARDS[name]


def test_a_newcomer_plans_for_an_r9700_without_one(env):
    answer = json.loads(
        strata_core("plan", "--json", "--sysfs", "example:r9700-780m", env=env).stdout
    )
    assert (answer["plugin"], answer["device"]["gfx"], answer["device"]["index"]) == (
        "hip_rdna4", "gfx1201", 0
    )  # fmt: skip
    assert answer["package"] == "rx9070"
    assert answer["switches"]["STRATA_HC_Q8"]["value"] == "1"


def test_strata_sysfs_names_an_example_too(env):
    answer = json.loads(
        strata_core("plan", "--json", env=env | {"STRATA_SYSFS": "example:780m"}).stdout
    )
    assert (answer["plugin"], answer["device"]["gfx"]) == ("igpu", "gfx1103")


def test_an_unknown_example_is_one_line_naming_them_with_the_closest(env):
    result = run("plan", "--sysfs", "example:r9700-78m", env=env)
    assert result.returncode == 2
    assert result.stderr == (
        "strata-core: error: plan: argument --sysfs: 'example:r9700-78m' is not an example "
        "machine (r9700-780m, rdna3-pair, 780m, gfx906-pair, h200-r9700); did you mean "
        "example:r9700-780m?\n"
    )
    result = run("plan", env=env | {"STRATA_SYSFS": "example:nope"})
    assert (result.returncode, result.stderr.splitlines()[-1]) == (
        2,
        "strata-core: error: 'example:nope' is not an example machine (r9700-780m, rdna3-pair, "
        "780m, gfx906-pair, h200-r9700)",
    )


def test_a_missing_sysfs_folder_is_one_line_wherever_it_is_named(env, tmp_path):
    missing = tmp_path / "nowhere"
    result = run("devices", env=env | {"STRATA_SYSFS": str(missing)})
    assert (result.returncode, result.stderr) == (
        2, f"strata-core: error: STRATA_SYSFS={missing}: no such directory\n"
    )  # fmt: skip
    result = run("devices", "--sysfs", str(missing), env=env)
    assert (result.returncode, result.stderr) == (
        2, f"strata-core: error: --sysfs {missing}: no such directory\n"
    )  # fmt: skip


def test_the_help_lists_the_examples(env):
    said = " ".join(strata_core("plan", "--help", env=env).stdout.split())
    assert "example:NAME, a machine strata ships: " + ", ".join(EXAMPLES) in said


def test_a_tree_is_written_once_and_stands_on_its_own(env, tmp_path):
    """Written into the cache's folder once; its links are relative, so the tree reads the
    same wherever it lies."""
    strata_core("devices", "--sysfs", "example:r9700-780m", env=env)
    examples = tmp_path / "answer-cache" / "examples"
    (tree,) = examples.iterdir()
    first = tree.stat().st_mtime_ns
    strata_core("devices", "--sysfs", "example:r9700-780m", env=env | {"STRATA_CACHE": "0"})
    assert [p.name for p in examples.iterdir()] == [tree.name]
    assert tree.stat().st_mtime_ns == first
    moved = tmp_path / "moved"
    tree.rename(moved)
    answer = json.loads(strata_core("devices", "--json", "--sysfs", str(moved), env=env).stdout)
    assert [d["vram_bytes"] for d in answer["devices"]] == [32 << 30, 512 << 20]
