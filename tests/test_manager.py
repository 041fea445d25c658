"""Discovery through entry points, allow and deny lists, broken plugins, API versions, ties."""

import functools
import importlib.metadata
import sys
import threading
import types
from pathlib import Path

import pluggy
import pytest

from strata_core.api.hookspec import PROJECT, hookimpl
from strata_core.api.manager import PluginManager, PluginStatus
from strata_core.api.records import Detection, DetectionContext
from strata_core.plan.claims import assign
from strata_core.plan.detection import PlanRequest
from strata_core.plan.pipeline import make_plan
from strata_core.testing.distributions import write_distribution
from strata_core.testing.sysfs import RX_7900_XTX

GOOD = """
    from strata_core.api.arch_plugin import ArchPlugin

    class Navi31(ArchPlugin):
        strata_api_version = 1
        targets = ("gfx1100",)

    plugin = Navi31()
"""
PATTERN = """
    from strata_core.api.arch_plugin import ArchPlugin

    class AnyRDNA3(ArchPlugin):
        strata_api_version = 1
        targets = ("gfx11*",)

    plugin = AnyRDNA3()
"""
FUTURE = """
    from strata_core.api.arch_plugin import ArchPlugin

    class Future(ArchPlugin):
        strata_api_version = 7
        targets = ("gfx1300",)

    plugin = Future()
"""
UNVERSIONED = """
    from strata_core.api.hookspec import hookimpl

    @hookimpl
    def strata_arch_targets():
        return ("gfx1300",)
"""
RAISES_IN_CLAIM = """
    from strata_core.api.hookspec import hookimpl

    strata_api_version = 1

    @hookimpl
    def strata_claim_device(device):
        raise RuntimeError("cannot read my table")
"""
WRONG_RETURN = """
    from strata_core.api.hookspec import hookimpl

    strata_api_version = 1

    @hookimpl
    def strata_claim_device(device):
        return 100
"""
BAD_KERNELS = """
    from strata_core.api.arch_plugin import ArchPlugin
    from strata_core.api.hookspec import hookimpl

    class RX6600(ArchPlugin):
        strata_api_version = 1
        targets = ("gfx1032",)

        @hookimpl
        def strata_select_kernels(self, device, context, switches, workload):
            return ["matvec_q8_0"]

    plugin = RX6600()
"""
UNKNOWN_HOOK = """
    from strata_core.api.hookspec import hookimpl

    strata_api_version = 1

    @hookimpl
    def strata_claim_devices(device):
        return None
"""


@pytest.fixture
def site(tmp_path, monkeypatch):
    site = tmp_path / "site"
    write_distribution(
        site, "third-party-navi", "2.0", {"navi31": "navi_plugin:plugin"}, {"navi_plugin.py": GOOD}
    )
    write_distribution(
        site,
        "third-party-misc",
        "0.3",
        {
            "broken": "no_such_module:plugin",
            "future": "future_plugin:plugin",
            "unversioned": "unversioned_plugin",
            "raiser": "raiser_plugin",
            "wrongtype": "wrongtype_plugin",
            "typo": "typo_plugin",
            "badkernels": "bad_kernels_plugin:plugin",
        },
        {
            "future_plugin.py": FUTURE,
            "unversioned_plugin.py": UNVERSIONED,
            "raiser_plugin.py": RAISES_IN_CLAIM,
            "wrongtype_plugin.py": WRONG_RETURN,
            "typo_plugin.py": UNKNOWN_HOOK,
            "bad_kernels_plugin.py": BAD_KERNELS,
        },
    )
    monkeypatch.syspath_prepend(str(site))
    yield site
    for name in (
        "navi_plugin",
        "future_plugin",
        "unversioned_plugin",
        "raiser_plugin",
        "wrongtype_plugin",
        "typo_plugin",
        "pattern_plugin",
        "bad_kernels_plugin",
    ):
        sys.modules.pop(name, None)


def status(manager, name):
    return manager.records[name].status


def test_third_party_plugin_is_discovered_with_its_distribution(site, env):
    manager = PluginManager.discover(env)
    record = manager.records["navi31"]
    assert (record.distribution, record.version, record.api_version) == (
        "third-party-navi",
        "2.0",
        1,
    )
    assert record.targets == ("gfx1100",) and record.status is PluginStatus.ACTIVE
    assert {"kfd", "hip", "hip_rdna3", "hip_rdna4", "igpu", "gfx906", "hip_rdna2"} <= set(
        manager.active()
    )


def test_broken_and_incompatible_plugins_are_reported_and_skipped(site, env):
    manager = PluginManager.discover(env)
    assert status(manager, "broken") is PluginStatus.BROKEN
    assert "No module named 'no_such_module'" in manager.records["broken"].why
    assert status(manager, "future") is PluginStatus.INCOMPATIBLE
    assert manager.records["future"].why == (
        "implements strata API 7; strata 0.1.0 supports API 1, 2"
    )
    assert status(manager, "unversioned") is PluginStatus.INCOMPATIBLE
    assert manager.records["unversioned"].why.startswith("declares no strata_api_version")
    assert status(manager, "typo") is PluginStatus.BROKEN
    assert "strata_claim_devices" in manager.records["typo"].why
    assert (
        "plugin future (third-party-misc 0.3) disabled: implements strata API 7; "
        "strata 0.1.0 supports API 1, 2"
    ) in manager.problems
    assert len([p for p in manager.problems if p.startswith("plugin broken ")]) == 1


def test_a_plugin_whose_hook_raises_is_skipped_and_the_others_still_answer(site, env, machine):
    found, manager = machine([RX_7900_XTX])
    assignments, _ = assign(manager, found.devices)
    assert status(manager, "raiser") is PluginStatus.BROKEN
    assert status(manager, "wrongtype") is PluginStatus.BROKEN
    assert manager.records["raiser"].why == (
        "strata_claim_device raised RuntimeError: cannot read my table"
    )
    assert manager.records["wrongtype"].why == (
        "strata_claim_device raised PluginError: returned int, expected Claim"
    )
    assert "raiser" not in manager.active()
    # navi31 and hip_rdna3 both claim gfx1100 exactly: a tie.
    assert assignments[0].plugin is None
    assert assignments[0].reason == (
        "plugins hip_rdna3 and navi31 both claim gfx1100 with specificity 100; "
        "set STRATA_ARCH_PLUGIN to one of them"
    )


def test_strict_mode_re_raises(site, env):
    with pytest.raises(ModuleNotFoundError):
        PluginManager.discover(env | {"STRATA_STRICT_PLUGINS": "1"})


def test_strict_mode_re_raises_hook_errors(site, env, machine):
    found, manager = machine(
        [RX_7900_XTX], STRATA_PLUGINS="raiser,hip_rdna3", STRATA_STRICT_PLUGINS="1"
    )
    with pytest.raises(RuntimeError, match="cannot read my table"):
        assign(manager, found.devices)


def test_strata_arch_plugin_settles_a_tie(site, machine):
    found, manager = machine([RX_7900_XTX], STRATA_PLUGINS="navi31,hip_rdna3")
    assignments, problems = assign(manager, found.devices, chosen="navi31")
    assert assignments[0].plugin == "navi31"
    assert assignments[0].reason == "navi31 carries code for gfx1100 (STRATA_ARCH_PLUGIN)"
    assert problems == []


def test_the_most_specific_claim_wins(tmp_path, monkeypatch, machine):
    site = write_distribution(
        tmp_path / "site2",
        "any-rdna3",
        "1.0",
        {"anyrdna3": "pattern_plugin:plugin"},
        {"pattern_plugin.py": PATTERN},
    )
    monkeypatch.syspath_prepend(str(site))
    found, manager = machine([RX_7900_XTX])
    (a,), _ = assign(manager, found.devices)
    assert a.plugin == "hip_rdna3"
    assert dict(a.claims)["anyrdna3"].score == 50
    sys.modules.pop("pattern_plugin", None)


def test_allow_list(site, env):
    manager = PluginManager.discover(env | {"STRATA_PLUGINS": "navi31,hip_rdna4"})
    assert set(manager.active()) == {
        "core",
        "kfd",
        "hip",
        "pci",
        "nvidia",
        "host",
        "navi31",
        "hip_rdna4",
    }
    assert manager.records["hip_rdna3"].why == "not named in STRATA_PLUGINS"
    assert manager.problems == []


def test_deny_list_reaches_builtins_too(site, env):
    manager = PluginManager.discover(env | {"STRATA_DISABLE_PLUGINS": "hip,navi31"})
    assert status(manager, "hip") is PluginStatus.DISABLED
    assert status(manager, "navi31") is PluginStatus.DISABLED


def test_autoload_off_loads_only_named_plugins(site, env):
    manager = PluginManager.discover(
        env | {"STRATA_DISABLE_PLUGIN_AUTOLOAD": "1", "STRATA_PLUGINS": "hip_rdna2"}
    )
    assert set(manager.active()) == {"core", "kfd", "hip", "pci", "nvidia", "host", "hip_rdna2"}
    manager = PluginManager.discover(env | {"STRATA_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert set(manager.active()) == {"core", "kfd", "hip", "pci", "nvidia", "host"}
    assert manager.records["hip_rdna4"].why == "STRATA_DISABLE_PLUGIN_AUTOLOAD is set"


def test_names_that_match_no_plugin_are_reported(env):
    manager = PluginManager.discover(
        env | {"STRATA_PLUGINS": "hip_rdna4,rdna5", "STRATA_DISABLE_PLUGINS": "gfx908"}
    )
    assert [p.split(",")[0] for p in manager.problems] == [
        "STRATA_PLUGINS names 'rdna5'",
        "STRATA_DISABLE_PLUGINS names 'gfx908'",
    ]
    assert "which matches no installed plugin (installed: " in manager.problems[0]


def test_a_callers_wrong_argument_raises_and_blames_no_plugin(env):
    manager = PluginManager.discover(env)
    with pytest.raises(TypeError, match="^strata_claim_device: device must be Device, not str$"):
        manager.claims("gfx1201")
    with pytest.raises(TypeError, match="^strata_detect_devices takes context, not device$"):
        manager._call("strata_detect_devices", None, device=None)
    assert not manager.problems
    assert all(r.status is not PluginStatus.BROKEN for r in manager.records.values())


def test_a_plugin_that_breaks_while_the_plan_is_built_is_in_the_plans_warnings(site, env):
    outcome = make_plan(PlanRequest(env=env, device="gfx1032"))
    assert outcome.plan.plugin == "badkernels"
    assert (
        "plugin badkernels (third-party-misc 0.3) skipped: strata_select_kernels raised "
        "PluginError: returned list, expected tuple[KernelChoice, ...]"
    ) in outcome.plan.warnings
    assert status(outcome.manager, "badkernels") is PluginStatus.BROKEN


def test_detectors_are_asked_side_by_side_and_answer_in_their_order(env, tmp_path):
    """The HIP and NVML probes wait on child processes, so every detector is asked at once."""
    both = threading.Barrier(2)

    class Detector:
        strata_api_version = 1

        def __init__(self, name: str) -> None:
            self.name = name

        @hookimpl
        def strata_detect_devices(self, context: DetectionContext) -> Detection:
            both.wait(timeout=60)  # asked one after the other, the first one breaks it
            return Detection(notes=(self.name,))

    manager = PluginManager.holding(
        {"first": Detector("first"), "second": Detector("second")}, env, builtins=()
    )
    answers = manager.detections(DetectionContext(sysfs=tmp_path, env=env))
    order = [i.plugin_name for i in manager.pm.hook.strata_detect_devices.get_hookimpls()]
    assert [(name, detection.notes) for name, detection in answers] == [(n, (n,)) for n in order]
    assert manager.problems == []



def _discovered(env):
    manager = PluginManager.discover(env)
    return manager.records, manager.problems


def test_a_start_with_the_same_distributions_reads_the_plugin_index(site, env, monkeypatch):
    first = _discovered(env)
    assert list(Path(env["STRATA_CACHE_DIR"]).glob("entry-points-*.marshal"))

    def unread(**_):
        raise AssertionError("package metadata read again")

    monkeypatch.setattr(importlib.metadata, "entry_points", unread)
    assert _discovered(env) == first


def test_a_distribution_installed_or_changed_after_the_index_is_seen(site, env):
    _discovered(env)
    modules = {"late_plugin.py": GOOD}
    write_distribution(site, "late", "1.0", {"late": "late_plugin:plugin"}, modules)
    try:
        assert _discovered(env)[0]["late"].distribution == "late"
        (site / "late-1.0.dist-info/entry_points.txt").write_text(
            "[strata.arch]\nrenamed = late_plugin:plugin\n"
        )
        records = _discovered(env)[0]
        assert "renamed" in records and "late" not in records
    finally:
        sys.modules.pop("late_plugin", None)


def _plugin_shapes():
    """Plugins of every kind pluggy takes hooks from, each with names that are and are not
    hook implementations."""

    @hookimpl
    def strata_arch_targets():
        return ("gfx1100",)

    def unmarked():
        return None

    def wrapper():
        return None

    wrapper.__func__ = strata_arch_targets

    class Hooks:
        strata_api_version = 1
        constant = 3
        marked_function = staticmethod(strata_arch_targets)

        @hookimpl
        def strata_claim_device(self, device):
            return None

        def helper(self):
            return None

        @staticmethod
        @hookimpl
        def strata_detect_devices(context):
            return None

        @classmethod
        @hookimpl
        def strata_kernel_library(cls):
            return None

        @property
        def strata_switches(self):
            return ()

        @functools.cached_property
        def cached(self):
            return 1

    class Child(Hooks):
        def strata_claim_device(self, device):  # overridden without the mark
            return None

    class Slotted:
        __slots__ = ("strata_arch_targets", "other")

        def __init__(self):
            self.strata_arch_targets = strata_arch_targets
            self.other = unmarked

    class Mutated(Hooks):
        pass

    mutated = Mutated()
    mutated.strata_run_context = strata_arch_targets
    mutated.bound = Hooks().strata_claim_device
    _ = mutated.cached

    class Module(types.ModuleType):
        strata_run_context = staticmethod(strata_arch_targets)

    module = types.ModuleType("shape")
    for name, value in {
        "strata_arch_targets": strata_arch_targets,
        "unmarked": unmarked,
        "wrapper": wrapper,
        "Hooks": Hooks,
        "number": 1,
        "as_static": staticmethod(strata_arch_targets),
        "as_method": types.MethodType(strata_arch_targets, object()),
        "__annotations__": {},
    }.items():
        setattr(module, name, value)
    return [module, Module("sub"), Hooks(), Child(), Slotted(), mutated, Hooks, Child]


def test_the_managers_hooks_are_those_plain_pluggy_finds():
    """The manager's quick look-up skips only what pluggy itself would skip."""
    ours = PluginManager({}).pm
    plain = pluggy.PluginManager(PROJECT)
    installed = [plugin for _, plugin in PluginManager.discover({}).pm.list_name_plugin()]
    for plugin in [*_plugin_shapes(), *installed]:
        for name in dir(plugin):
            expected = plain.parse_hookimpl_opts(plugin, name)
            assert ours.parse_hookimpl_opts(plugin, name) == expected, (plugin, name)
