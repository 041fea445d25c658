"""The page's catalogue of targets (strata_core/archdb.toml), the in-tree plugins' records of
their targets (each plugin's arch.toml), and what a target no plugin describes falls back to."""

import json
import tomllib
from pathlib import Path

import pytest

from strata_core import archdb
from strata_core.api.arch import (
    HIPBLASLT,
    ROCBLAS,
    Architectures,
    ArchRecord,
    MatrixCores,
    fallback,
    records_from_toml,
)
from strata_core.api.manager import PluginManager
from strata_core.archdb import SupportStatus as S

ROOT = Path(__file__).parents[1]
REFERENCE_TARGETS = {
    "gfx906",
    "gfx1012",
    "gfx1030",
    "gfx1031",
    "gfx1032",
    "gfx1100",
    "gfx1101",
    "gfx1102",
    "gfx1103",
    "gfx1150",
    "gfx1151",
    "gfx1152",
    "gfx1200",
    "gfx1201",
}
#: the in-tree plugins' records, as discovery reads them
RECORDS = PluginManager.discover({}).arch_records()


def test_every_target_the_reference_names_is_in_the_catalogue():
    assert set(archdb.PAGE) == REFERENCE_TARGETS


def test_supported_cards_statuses():
    status = {t: a.status for t, a in archdb.PAGE.items()}
    assert status["gfx1100"] is status["gfx1201"] is S.MAINTAINER_TESTED
    assert status["gfx1200"] is status["gfx1101"] is S.VALIDATED_BY_OWNER
    assert status["gfx1102"] is S.REPORTED_WORKING
    assert status["gfx1151"] is S.OWN_PAGE  # "Ryzen AI Max (Strix Halo)  gfx1151  STRIX_HALO.md"
    assert status["gfx1030"] is status["gfx1031"] is S.PACKAGE_NOT_TESTED
    assert status["gfx1103"] is S.OPT_IN_BUILD
    assert status["gfx906"] is S.SOURCE_BUILD_COMMUNITY
    assert status["gfx1150"] is status["gfx1152"] is S.NAMED_NOT_SUPPORTED
    assert status["gfx1012"] is S.BUILDS_BY_HAND


#: the in-tree plugins' records of the targets the page names
ON_THE_PAGE = {t: r for t, r in RECORDS.items() if t in archdb.PAGE}


def test_every_row_says_where_on_the_page_it_comes_from():
    for target, page in archdb.PAGE.items():
        assert target in page.page or "gfx103x" in page.page, target
    for target, record in ON_THE_PAGE.items():
        assert target in record.page or "gfx103x" in record.page, target
    for target, record in RECORDS.items():  # a target the page does not name: no page words
        if target not in archdb.PAGE:
            assert record.status is None and record.page == "", target


def test_the_in_tree_plugins_describe_every_target_they_carry():
    manager = PluginManager.discover({})
    for name in ("hip_rdna4", "hip_rdna3", "hip_rdna2", "gfx906", "igpu"):
        carried = manager.records[name].targets
        assert {t for t, r in RECORDS.items() if r.described_by == name} == set(carried), name


def test_a_plugins_record_quotes_the_page_as_the_catalogue_does():
    """Where both speak of a target, the plugin and the core's catalogue give the page's
    family, cards and status alike."""
    for target, record in ON_THE_PAGE.items():
        page = archdb.PAGE[target]
        assert (record.family, record.cards, record.status) == (
            page.family,
            page.cards,
            page.status,
        ), target


def test_instruction_facts_of_the_in_tree_records():
    for target, arch in ON_THE_PAGE.items():
        gfx11_or_12 = arch.generation in ("gfx11", "gfx12")
        assert arch.generation == archdb.generation_of(target)
        assert arch.matrix_cores is (MatrixCores.WMMA if gfx11_or_12 else MatrixCores.NONE)
        assert arch.int8_dot == ("v_dot4_i32_iu8" if gfx11_or_12 else "v_dot4_i32_i8"), target
        assert arch.wave_size == (64 if target == "gfx906" else 32), target
        assert arch.lds_kib == 64
        assert arch.table_library in (HIPBLASLT, ROCBLAS, None)
    assert {t for t, a in ON_THE_PAGE.items() if a.integrated_only} == {
        "gfx1103",
        "gfx1150",
        "gfx1151",
        "gfx1152",
    }


def test_the_extras_follow_the_catalogue_and_strata_s_own_metadata():
    """The extra to install comes from the catalogue, its distribution from strata's
    Requires-Dist; each extra's plugin describes the targets the catalogue sends to it."""
    assert archdb.extra_for("gfx1201") == ("rdna4", "strata-hip-rdna4")
    assert archdb.extra_for("gfx1151") == ("igpu", "strata-igpu")
    assert archdb.extra_for("sm_90") == ("cuda", "strata-cuda")
    assert archdb.extra_for("gfx1032") is None
    assert archdb.extra_for("gfx942") is None
    manager = PluginManager.discover({})
    for target, page in archdb.PAGE.items():
        found = archdb.extra_for(target)
        if found is None:
            assert not page.extra, target
            continue
        _, distribution = found
        plugins = [r.name for r in manager.records.values() if r.distribution == distribution]
        assert [RECORDS[target].described_by] == plugins, target


def test_a_target_no_plugin_describes_falls_back_to_what_the_page_says():
    archs = Architectures({})
    page = archs.of("gfx1201:xnack-")
    assert (page.target, page.family, page.status) == ("gfx1201", "RDNA4", S.MAINTAINER_TESTED)
    assert page.matrix_cores is None and page.wave_size is None and not page.described_by
    unknown = archs.of("gfx942")
    assert unknown.family == "gfx9, described by no installed plugin"
    assert unknown.generation == "gfx9" and unknown.status is None and unknown.cards == ()
    assert fallback("sm_90").family == "NVIDIA compute capability 9.0"
    assert archs.of("sm_unknown").family == "NVIDIA, compute capability unknown"


def test_a_record_names_cards_by_pci_id_and_revision():
    (record,) = records_from_toml(
        GOOD + 'wave_size = 32\n[gfx9999.names]\n"7550:C0" = "RX 9070 XT"\n"7550:c3" = "RX 9070"\n'
        '"7551" = "Radeon AI PRO R9700"\n',
        "test",
    )
    assert record.name_of(0x7550, 0xC0) == "RX 9070 XT"
    assert record.name_of(0x7550, 0xC3) == "RX 9070"
    assert record.name_of(0x7550, None) is None  # two names: the revision must tell
    assert record.name_of(0x7551, 0xC0) == record.name_of(0x7551, None) == "Radeon AI PRO R9700"
    assert Architectures({"gfx9999": record}).by_device_id(0x7550) is record
    assert Architectures({"gfx9999": record}).by_device_id(0x744C) is None


def test_device_ids_several_targets_share_name_none():
    first, second = (
        ArchRecord(t, "F", "gfx99", 32, "none", None, 64, names={"7550": "X"})
        for t in ("gfx9990", "gfx9991")
    )
    assert Architectures({"gfx9990": first, "gfx9991": second}).by_device_id(0x7550) is None


GOOD = (
    '[gfx9999]\nfamily = "X"\ngeneration = "gfx99"\nmatrix_cores = "MFMA"\n'
    'int8_dot = "v_dot4_i32_i8"\nlds_kib = 64\n'
)


@pytest.mark.parametrize(
    ("row", "says"),
    [
        ("wave_size = 48\n", "wave_size"),  # neither wave32 nor wave64
        ("wave_size = 32\nshaders = 64\n", "shaders"),  # a field the schema does not have
        ('wave_size = 32\nwmma_prompt_gemm = "yes"\n', "wmma_prompt_gemm"),  # wrong type
        ('wave_size = 32\nmatrix_cores = "XMX"\n', "XMX"),  # not a kind of matrix cores
        ('wave_size = 32\n[gfx9999.names]\n"GPU0" = "X"\n', "GPU0"),  # not a PCI id
        ("", "wave_size"),  # a field missing
    ],
)
def test_the_schema_refuses_a_bad_record(row, says):
    text = GOOD + row
    if "matrix_cores" in row:
        text = text.replace('matrix_cores = "MFMA"\n', "", 1)
    with pytest.raises(ValueError, match=f"test: \\[gfx9999\\]: .*{says}"):
        records_from_toml(text, "test")


def test_the_catalogue_schema_refuses_a_bad_row(tmp_path):
    good = '[gfx9999]\nfamily = "X"\ncards = ["X"]\nstatus = "builds by hand"\npage = "p"\n'
    path = tmp_path / "archdb.toml"
    path.write_text(good)
    assert archdb.load(path)["gfx9999"].family == "X"
    for bad in ("wave_size = 32\n", 'status = "great"\n'):
        path.write_text(good.replace('status = "builds by hand"\n', "") + bad)
        with pytest.raises((TypeError, ValueError)):
            archdb.load(path)


def test_each_plugins_arch_toml_is_valid_toml_keyed_by_its_targets():
    for path in sorted(ROOT.glob("plugins/*/src/*/arch.toml")):
        rows = tomllib.loads(path.read_text())
        assert all(t.startswith("gfx") for t in rows), path


def _site_with_a_plugin_for_gfx9990(tmp_path: Path, facts: str) -> Path:
    """An installed third-party plugin for gfx9990, described by its own arch.toml."""
    from strata_core.testing.distributions import write_distribution

    site = write_distribution(tmp_path / "site", "strata-x", "1.0", {"x": "x_plugin:plugin"}, {})
    package = site / "x_plugin"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from strata_core.api import ArchPlugin\n\n"
        "class X(ArchPlugin):\n    strata_api_version = 2\n    targets = ('gfx9990',)\n\n"
        "plugin = X()\n"
    )
    (package / "arch.toml").write_text(facts)
    return site


def test_a_plan_follows_an_edited_arch_toml_through_the_answer_cache(env, tmp_path):
    """An answer made from a plugin's records depends on its arch.toml as on its code: after
    an edit, the same command answers anew, whatever the cache holds."""
    from cli_runner import strata_core

    site = _site_with_a_plugin_for_gfx9990(
        tmp_path, GOOD.replace("9999", "9990") + "wave_size = 32\n"
    )
    with_plugin = env | {"PYTHONPATH": str(site)}

    def family() -> str:
        plan = strata_core("plan", "--json", "--device", "gfx9990", env=with_plugin).stdout
        return json.loads(plan)["device"]["family"]

    assert family() == family() == "X"  # the second from the cache
    arch_toml = site / "x_plugin" / "arch.toml"
    arch_toml.write_text(arch_toml.read_text().replace('family = "X"', 'family = "CDNA9"'))
    assert family() == "CDNA9"


def test_a_malformed_arch_toml_is_one_line_and_the_plugin_is_skipped(env, tmp_path):
    from cli_runner import strata_core

    site = _site_with_a_plugin_for_gfx9990(
        tmp_path, GOOD.replace("9999", "9990") + "wave_size = 48\n"
    )
    result = strata_core("devices", "--sysfs", str(tmp_path), env=env | {"PYTHONPATH": str(site)})
    path = site / "x_plugin" / "arch.toml"
    assert (
        f"strata-core: warning: plugin x (strata-x 1.0) skipped: strata_arch_records raised "
        f"ValueError: {path}: [gfx9990]: 'wave_size' must be in (32, 64, None) (got 48)"
    ) in result.stderr.splitlines()
    listing = json.loads(
        strata_core("plugins", "--json", env=env | {"PYTHONPATH": str(site)}).stdout
    )
    (x,) = [p for p in listing["plugins"] if p["name"] == "x"]
    assert x["status"] == "broken"


def test_two_plugins_describing_one_target_differently_are_named_once():
    from strata_core.api import hookimpl

    def describing(family: str) -> object:
        class Describes:
            strata_api_version = 2

            @hookimpl
            def strata_arch_records(self) -> tuple[ArchRecord, ...]:
                return (ArchRecord("gfx9990", family, "gfx99", 32, "none", None, 64),)

        return Describes()

    manager = PluginManager.holding({"a": describing("X"), "b": describing("Y")})
    for _ in range(2):
        assert manager.arch_records()["gfx9990"].described_by == "a"
    assert manager.problems == [
        "plugins a and b both describe gfx9990, differently; a's facts are used"
    ]
    same = PluginManager.holding({"a": describing("X"), "b": describing("X")})
    assert same.arch_records()["gfx9990"].family == "X" and same.problems == []


def test_a_version_1_plugin_still_plans_with_the_fallback_said_as_such():
    """A plugin written against API 1 describes nothing: it loads, conforms, and its card's
    plan says which facts no installed plugin gives."""
    from strata_core.api import ArchPlugin, RunContext
    from strata_core.testing import check_plugin, plan_for

    class Old(ArchPlugin):
        strata_api_version = 1
        targets = ("gfx1032",)

    assert not any("describe" in problem for problem in check_plugin(Old(), "old"))

    class New(Old):
        strata_api_version = 2

    assert (
        "carries code for gfx1032 but does not describe it (strata_arch_records: an arch.toml "
        "table for it)"
    ) in check_plugin(New(), "new")
    plan = plan_for("gfx1032", RunContext(os="linux"), plugins={"old": Old()})
    assert (plan.plugin, plan.device.family, plan.device.name) == (
        "old",
        "RDNA2",
        "RX 6600 / RX 6600 XT",
    )
    reasons = {op: (c.variant, c.reason) for op, c in plan.kernels.items()}
    assert reasons["matvec_q8_0"] == (
        "v_dot4_i32_i8",
        "no installed plugin describes gfx1032's int8 dot instruction; v_dot4_i32_i8 assumed",
    )
    assert reasons["prompt_attention"] == (
        "fp32",
        "no installed plugin describes gfx1032's matrix cores",
    )
    assert reasons["prompt_gemm"] == ("hipblas", "the prompt GEMMs run through hipBLAS")
