"""check_plugin and `strata-core plugins --check`: the in-tree plugins conform, and each kind
of broken contract is named."""

import json
import tomllib
from pathlib import Path

import pytest
from cli_runner import strata_core

from strata_core.api.arch_plugin import ArchPlugin
from strata_core.api.hookspec import hookimpl
from strata_core.api.manager import PluginManager
from strata_core.api.records import Claim, KernelLibrary
from strata_core.api.switches import Rule, Switch
from strata_core.testing import check_plugin
from strata_core.testing.distributions import write_distribution

#: the workspace's plugins (plugins/*), by their entry point names
IN_TREE = tuple(
    sorted(
        name
        for path in (Path(__file__).parents[1] / "plugins").glob("*/pyproject.toml")
        for name in tomllib.loads(path.read_text())["project"]["entry-points"]["strata.arch"]
    )
)


class RX6600(ArchPlugin):
    strata_api_version = 1
    targets = ("gfx1032",)
    switches = (
        Switch("STRATA_RX6600_LDS_SPLIT", ("0", "1"), "split LDS", False, "off",
               targets=("gfx1032",)),
    )  # fmt: skip
    rules = (Rule("STRATA_RX6600_LDS_SPLIT", "1", "8 GiB cards"),)

    @hookimpl
    def strata_kernel_library(self) -> None:
        return None


@pytest.mark.parametrize("name", IN_TREE)
def test_every_in_tree_plugin_conforms(name):
    plugin = PluginManager.discover({}).pm.get_plugin(name)
    assert check_plugin(plugin, name) == []


def test_a_well_formed_third_party_plugin_conforms():
    assert check_plugin(RX6600(), "rx6600") == []


def test_claiming_a_card_it_does_not_list():
    class Greedy(RX6600):
        @hookimpl
        def strata_claim_device(self, device):
            return Claim(100, "runs everything")

    problems = check_plugin(Greedy(), "greedy")
    assert "claims gfx1030, which is not among its targets gfx1032" in problems
    assert "claims gfx1032 as a wave64 card; a wave32 build must refuse it" in problems


def test_listing_a_card_it_refuses():
    class Shy(RX6600):
        @hookimpl
        def strata_claim_device(self, device):
            return Claim.refuse("is shy")

    assert check_plugin(Shy(), "shy") == [
        "lists gfx1032 among its targets but does not claim it: is shy"
    ]


def test_defaults_only_for_declared_switches_and_accepted_values():
    class Loose(RX6600):
        rules = (
            Rule("STRATA_NOT_DECLARED", "1", "made up"),
            Rule("STRATA_RX6600_LDS_SPLIT", "2", "out of range", os=("windows",)),
        )

    problems = check_plugin(Loose(), "loose")
    assert (
        "gives a default for STRATA_NOT_DECLARED, which no plugin declares, on gfx1032 "
        "(linux, kv None, pack None)"
    ) in problems
    assert (
        "gives STRATA_RX6600_LDS_SPLIT=2 on gfx1032 (windows, kv None, pack None); "
        "STRATA_RX6600_LDS_SPLIT accepts 0, 1"
    ) in problems


def test_a_switch_the_core_already_declares():
    class Copycat(RX6600):
        switches = (Switch("STRATA_HIP_WMMA", ("0", "1"), "again", False, "off"),)

    assert "plugin copycat declares STRATA_HIP_WMMA again; the first is kept" in check_plugin(
        Copycat(), "copycat"
    )


def test_a_kernel_library_for_other_targets(tmp_path):
    class Mismatched(RX6600):
        @hookimpl
        def strata_kernel_library(self):
            return KernelLibrary(tmp_path, ("gfx1030",), problems=("clang failed for gfx1030",))

    assert check_plugin(Mismatched(), "mismatched") == [
        "its kernel library is built for gfx1030; it claims gfx1032",
        "kernel library: clang failed for gfx1030",
    ]


def test_a_code_object_that_is_not_what_it_says(tmp_path):
    rdna2 = PluginManager.discover({}).pm.get_plugin("hip_rdna2")
    real = rdna2.strata_kernel_library()

    class Relabelled(RX6600):
        @hookimpl
        def strata_kernel_library(self):
            return KernelLibrary(tmp_path, ("gfx1032",), {"gfx1032": real.code_objects["gfx1030"]})

    assert check_plugin(Relabelled(), "relabelled") == [
        "strata_kernels-gfx1030.hsaco is compiled for gfx1030, listed as gfx1032"
    ]


def test_tables_must_be_valid_and_for_its_own_targets(tmp_path):
    (tmp_path / "gfx1030-hipblaslt-100401.txt").write_text("not a table\n")

    class Tables(RX6600):
        @hookimpl
        def strata_tuning_dirs(self, device):
            return (tmp_path,)

    problems = check_plugin(Tables(), "tables")
    table = tmp_path / "gfx1030-hipblaslt-100401.txt"
    assert f"{table} is a table for gfx1030, which this plugin does not run" in problems
    assert any(p.startswith(f"{table}:") for p in problems if "which this plugin" not in p)


def test_a_hook_that_raises_is_named():
    class Raising(RX6600):
        @hookimpl
        def strata_switch_defaults(self, device, context):
            raise RuntimeError("boom")

    assert check_plugin(Raising(), "raising") == [
        "strata_switch_defaults raised RuntimeError: boom"
    ]


def test_a_plugin_without_an_api_version():
    class Unversioned:
        pass

    (problem,) = check_plugin(Unversioned(), "unversioned")
    assert problem.startswith("declares no strata_api_version; strata 0.1.0 supports API 1")


def test_plugins_check_on_the_installed_plugins(env):
    result = strata_core("plugins", "--check", env=env)
    assert result.stdout.splitlines() == [f"{name}: conforms" for name in IN_TREE]
    answer = json.loads(strata_core("plugins", "--check", "--json", env=env).stdout)
    assert answer == {
        "schema_version": 1,
        "checked": dict.fromkeys(IN_TREE, []),
        "problems": [],
    }


def test_plugins_check_fails_on_a_broken_plugin(env, tmp_path):
    site = write_distribution(
        tmp_path / "site",
        "strata-greedy",
        "1.0",
        {"greedy": "greedy_plugin:plugin"},
        {
            "greedy_plugin.py": """
            from strata_core.api.arch_plugin import ArchPlugin
            from strata_core.api.hookspec import hookimpl
            from strata_core.api.records import Claim

            class Greedy(ArchPlugin):
                strata_api_version = 1
                targets = ("gfx1032",)

                @hookimpl
                def strata_claim_device(self, device):
                    return Claim(100, "runs everything")

            plugin = Greedy()
            """
        },
    )
    result = strata_core("plugins", "--check", env=env | {"PYTHONPATH": str(site)}, check=False)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[lines.index("greedy: 16 problems") + 1] == (
        "  claims gfx906, which is not among its targets gfx1032"
    )


def test_a_malformed_or_missing_build_manifest_is_one_line(tmp_path):
    from strata_core.api import manifest

    missing = manifest.load(tmp_path)
    assert missing.problems == (
        f"no {tmp_path / 'build.json'}: the plugin was installed without its kernel build",
    )
    (tmp_path / "build.json").write_text('{"source": "x.hip", "targets": "gfx1032"}')
    (problem,) = manifest.load(tmp_path).problems
    assert problem == (
        f"{tmp_path / 'build.json'} is not a build manifest: required field missing @ "
        "build.code_objects"
    )
    (tmp_path / "build.json").write_text(
        '{"source": "x.hip", "targets": ["gfx1032"], "code_objects": {"gfx1032": "gone.hsaco"}}'
    )
    gone = manifest.load(tmp_path)
    assert gone.problems == (f"{tmp_path / 'gone.hsaco'} is missing",)
    assert gone.missing == ("gfx1032",)
