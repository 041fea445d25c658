import pytest

from strata_core import archdb
from strata_core.archdb import SupportStatus as S

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


def test_every_target_the_reference_names_is_in_the_database():
    assert set(archdb.ARCHS) == REFERENCE_TARGETS


def test_supported_cards_statuses():
    status = {t: a.status for t, a in archdb.ARCHS.items()}
    assert status["gfx1100"] is status["gfx1201"] is S.MAINTAINER_TESTED
    assert status["gfx1200"] is status["gfx1101"] is S.VALIDATED_BY_OWNER
    assert status["gfx1102"] is S.REPORTED_WORKING
    assert status["gfx1030"] is status["gfx1031"] is S.PACKAGE_NOT_TESTED
    assert status["gfx1103"] is S.OPT_IN_BUILD
    assert status["gfx906"] is S.SOURCE_BUILD_COMMUNITY
    assert status["gfx1150"] is status["gfx1152"] is S.NAMED_NOT_SUPPORTED
    assert status["gfx1012"] is S.BUILDS_BY_HAND


def test_instruction_facts():
    for target, arch in archdb.ARCHS.items():
        gfx11_or_12 = target.startswith(("gfx11", "gfx12"))
        assert arch.matrix_cores is gfx11_or_12, target
        assert arch.int8_dot == ("v_dot4_i32_iu8" if gfx11_or_12 else "v_dot4_i32_i8"), target
        assert arch.wave_size == (64 if target == "gfx906" else 32), target
        assert arch.table_library in (archdb.HIPBLASLT, archdb.ROCBLAS, None)
    assert {t for t, a in archdb.ARCHS.items() if a.integrated_only} == {
        "gfx1103",
        "gfx1150",
        "gfx1151",
        "gfx1152",
    }


def test_lookup_ignores_target_id_features_and_names_unknown_families():
    assert archdb.lookup("gfx906:sramecc+:xnack-").target == "gfx906"
    assert archdb.family_of("gfx1201") == "RDNA4"
    assert archdb.family_of("gfx1036") == "unknown gfx10 family"


def test_extras_cover_the_plugins_targets():
    assert archdb.extra_for("gfx1201") == ("rdna4", "strata-hip-rdna4")
    assert archdb.extra_for("gfx1151") == ("igpu", "strata-igpu")
    assert archdb.extra_for("gfx1032") is None


def test_every_row_says_where_on_the_page_it_comes_from():
    for target, arch in archdb.ARCHS.items():
        assert target in arch.page or "gfx103x" in arch.page, target


@pytest.mark.parametrize(
    "row",
    [
        "wave_size = 48\n",  # neither wave32 nor wave64
        "wave_size = 32\nlds_kib = 64\n",  # a field the schema does not have
        'wave_size = 32\nwmma_prompt_gemm = "yes"\n',  # a field of the wrong type
        "",  # a field missing
    ],
)
def test_the_schema_refuses_a_bad_row(tmp_path, row):
    good = (
        '[gfx9999]\nfamily = "X"\ncards = ["X"]\nmatrix_cores = false\nint8_dot = "v"\n'
        'integrated_only = false\nstatus = "builds by hand"\npage = "p"\n'
    )
    path = tmp_path / "archdb.toml"
    path.write_text(good + row)
    with pytest.raises((TypeError, ValueError)):
        archdb.load(path)
