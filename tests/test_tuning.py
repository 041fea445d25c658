"""Which table is taken and why, library versions, refusal counting, and calibration."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from strata_core.api.arch import Architectures
from strata_core.api.manager import PluginManager
from strata_core.api.switches import Resolved
from strata_core.cli import main as cli
from strata_core.errors import StrataError
from strata_core.host.tuning import HostGemmTunable
from strata_core.tuning import versions
from strata_core.tuning.calibrate import Case, calibrate, wall_clock
from strata_core.tuning.dispatch import SolutionRefused, TunedDispatch
from strata_core.tuning.kinds import CUBLASLT, HIPBLASLT, HOST, ROCBLAS
from strata_core.tuning.lookup import (
    decide_hipblaslt,
    decide_host,
    decide_rocblas,
    find_table,
    search_dirs,
)
from strata_core.tuning.tables import read, render
from strata_core.tuning.versions import LibraryVersion

FIXTURES = Path(__file__).parent / "fixtures/tables"
HIP_NAME = "gfx1151-hipblaslt-100401.txt"
ROC_NAME = "gfx1030-rocblas-5.6.0.8d1ae90e.txt"
V100401 = LibraryVersion("100401", "given")
ROC_VERSION = LibraryVersion("5.6.0.8d1ae90e", "given")
#: a target's record as the in-tree plugins give it
ARCH = Architectures(PluginManager.discover({}).arch_records()).of


def switches(table=None, tuning=None, rocblas=None, table_source="arch-default"):
    unset = Resolved(None, "builtin", "unset")
    return {
        "STRATA_HIPBLASLT_TABLE": Resolved(table, table_source, "") if table else unset,
        "STRATA_HIPBLASLT_TUNING": Resolved(tuning, "user", "") if tuning else unset,
        "STRATA_ROCBLAS_TUNING": Resolved(rocblas, "user", "") if rocblas else unset,
    }


@pytest.fixture
def folders(tmp_path):
    """Three search folders in order: engine, STRATA_TUNING_DIR, plugin."""
    made = [tmp_path / name for name in ("engine", "tuning-dir", "plugin")]
    for folder in made:
        folder.mkdir()
    return made


def put(folder, name=HIP_NAME, text=None):
    (folder / name).write_text(text if text is not None else (FIXTURES / name).read_text())
    return folder / name


def test_gfx1151_takes_a_matching_table_by_default(folders):
    put(folders[2])
    decision = decide_hipblaslt(ARCH("gfx1151"), switches("on"), V100401, folders)
    assert decision.used and decision.rows == 3
    assert decision.table == str(folders[2] / HIP_NAME)
    assert decision.log == (
        f"hipBLASLt tuning table: {folders[2] / HIP_NAME} (3 rows, gfx1151, version 100401)",
        "prefill gemm: hipBLASLt tuning enabled (3 rows, gfx1151, version 100401)",
    )


def test_the_engines_folder_comes_first_then_strata_tuning_dir(folders):
    for folder in folders[1:]:
        put(folder)
    assert decide_hipblaslt(ARCH("gfx1151"), switches("on"), V100401, folders).table == str(
        folders[1] / HIP_NAME
    )
    put(folders[0])
    assert decide_hipblaslt(ARCH("gfx1151"), switches("on"), V100401, folders).table == str(
        folders[0] / HIP_NAME
    )


def test_search_dirs_order(tmp_path):
    exe = tmp_path / "build" / "strata"
    assert search_dirs(str(exe), {"STRATA_TUNING_DIR": "/a:/b"}, [Path("/p")]) == [
        tmp_path / "build" / "tuning",
        Path("/a"),
        Path("/b"),
        Path("/p"),
    ]


def test_other_cards_need_strata_hipblaslt_table_on(folders):
    put(
        folders[0],
        "gfx1100-hipblaslt-100401.txt",
        (FIXTURES / HIP_NAME).read_text().replace("gfx1151", "gfx1100"),
    )
    off = decide_hipblaslt(ARCH("gfx1100"), switches(), V100401, folders)
    assert not off.used
    assert off.log == (
        "hipBLASLt tuning table: none (off by default on gfx1100: a table changes "
        "rounding, so packaged engines take it by default only on gfx1151; "
        "STRATA_HIPBLASLT_TABLE=on takes it)",
    )
    assert decide_hipblaslt(
        ARCH("gfx1100"), switches("on", table_source="user"), V100401, folders
    ).used


def test_off_means_never_also_on_strix_halo(folders):
    put(folders[0])
    decision = decide_hipblaslt(
        ARCH("gfx1151"), switches("off", table_source="user"), V100401, folders
    )
    assert not decision.used and decision.reason == "STRATA_HIPBLASLT_TABLE=off (user)"


def test_version_and_arch_must_both_match(folders):
    put(folders[0])
    decision = decide_hipblaslt(
        ARCH("gfx1151"), switches("on"), LibraryVersion("100500", "probed"), folders
    )
    assert not decision.used
    assert decision.reason == (
        f"no gfx1151-hipblaslt-100500.txt in {', '.join(map(str, folders))} (there: {HIP_NAME})"
    )
    assert not decide_hipblaslt(ARCH("gfx1150"), switches("on"), V100401, folders).used


def test_unknown_version(folders):
    put(folders[0])
    decision = decide_hipblaslt(
        ARCH("gfx1151"), switches("on"), LibraryVersion(None, "no hipBLASLt library found"), folders
    )
    assert decision.reason == (
        "hipBLASLt version unknown (no hipBLASLt library found); --hipblaslt gives it for planning"
    )


def test_a_malformed_table_is_refused_whole_and_the_next_folder_is_tried(folders):
    put(folders[0], text=(FIXTURES / HIP_NAME).read_text() + "512 1 1 bf16\n")
    put(folders[1])
    decision = decide_hipblaslt(ARCH("gfx1151"), switches("on"), V100401, folders)
    assert decision.table == str(folders[1] / HIP_NAME)
    assert decision.warnings == (
        f"hipBLASLt table refused: {folders[0] / HIP_NAME}:6: expected "
        "8 columns (T N K dtype op solution default_us best_us), got 4",
    )


def test_a_table_whose_header_contradicts_its_name_is_refused(folders):
    put(folders[0], text=(FIXTURES / HIP_NAME).read_text().replace("100401", "100500"))
    decision = decide_hipblaslt(ARCH("gfx1151"), switches("on"), V100401, folders)
    assert not decision.used
    assert "its header names STRATA_HIPBLASLT_TUNING_V1 gfx1151 100500" in decision.warnings[0]


def test_a_forced_file_is_always_kept_with_a_warning_on_mismatch(folders):
    forced = FIXTURES / HIP_NAME
    decision = decide_hipblaslt(
        ARCH("gfx1100"),
        switches("off", tuning=str(forced)),
        LibraryVersion("100200", "probed"),
        folders,
    )
    assert decision.used and decision.table == str(forced)
    assert decision.warnings == (
        f"STRATA_HIPBLASLT_TUNING={forced} names gfx1151 version 100401; this card is gfx1100 "
        "with hipBLASLt 100200; kept as set",
    )
    assert (
        decision.log[1]
        == "prefill gemm: hipBLASLt tuning enabled (3 rows, gfx1151, version 100401)"
    )


def test_a_forced_file_that_is_malformed_or_missing_is_refused(folders, tmp_path):
    missing = tmp_path / "nope.txt"
    decision = decide_hipblaslt(ARCH("gfx1151"), switches(tuning=str(missing)), V100401, folders)
    assert not decision.used
    assert decision.reason.startswith(
        f"STRATA_HIPBLASLT_TUNING={missing} is refused: {missing}:1: cannot read"
    )


def test_rocblas_on_gfx103x(folders):
    put(folders[2], ROC_NAME)
    decision = decide_rocblas(ARCH("gfx1030"), switches(), ROC_VERSION, folders)
    assert decision.used
    assert decision.log == ("rocBLAS tuning enabled (4 rows, gfx1030, version 5.6.0.8d1ae90e)",)
    missing = decide_rocblas(ARCH("gfx1031"), switches(), ROC_VERSION, folders)
    assert missing.log[0].startswith("rocBLAS tuning disabled (no gfx1031-rocblas-5.6.0.8d1ae90e")
    other = decide_rocblas(ARCH("gfx1100"), switches(), ROC_VERSION, folders)
    assert (other.used, other.reason, other.log) == (
        False,
        "rocBLAS tables serve gfx103x; gfx1100 uses hipBLASLt",
        (),
    )


def test_the_engine_is_told_the_rocblas_folder_and_the_hipblaslt_file(folders):
    """STRATA_ROCBLAS_TUNING takes a folder, STRATA_HIPBLASLT_TUNING a file: a table found in
    the search folders is passed on in the form its variable takes; one the user named
    through the variable is not passed again."""
    put(folders[2], ROC_NAME)
    put(folders[1])
    rocblas = decide_rocblas(ARCH("gfx1030"), switches(), ROC_VERSION, folders)
    assert rocblas.engine_env == {"STRATA_ROCBLAS_TUNING": str(folders[2])}
    hipblaslt = decide_hipblaslt(ARCH("gfx1151"), switches("on"), V100401, folders)
    assert hipblaslt.engine_env == {"STRATA_HIPBLASLT_TUNING": str(folders[1] / HIP_NAME)}
    named = decide_rocblas(ARCH("gfx1030"), switches(rocblas=str(folders[2])), ROC_VERSION, [])
    assert named.used and named.engine_env == {}


def test_strata_rocblas_tuning_takes_a_file_or_a_folder(folders, tmp_path):
    put(folders[0], ROC_NAME)
    assert decide_rocblas(
        ARCH("gfx1030"), switches(rocblas=str(folders[0])), ROC_VERSION, []
    ).table == str(folders[0] / ROC_NAME)
    forced = decide_rocblas(
        ARCH("gfx1030"),
        switches(rocblas=str(FIXTURES / ROC_NAME)),
        LibraryVersion("5.7.1.abc12345", "probed"),
        [],
    )
    assert forced.used and "kept as set" in forced.warnings[0]


# Library versions.


def test_hipblaslt_version_numbers():
    assert versions.hipblaslt_number("1.4.1") == "100401"
    assert versions.hipblaslt_number("1.2.2") == "100202"
    assert versions.hipblaslt_number("100500") == "100500"
    with pytest.raises(StrataError, match="expected a version such as 1.4.1"):
        versions.hipblaslt_number("1.4")
    assert versions.rocblas_version("5.6.0.8d1ae90e") == "5.6.0.8d1ae90e"
    with pytest.raises(StrataError, match="tweak hash"):
        versions.rocblas_version("5.6.0")


@pytest.fixture
def stand_in_libraries(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    sources = {
        "libhipblaslt.so": "int hipblasLtCreate(void **h) { *h = (void *)1; return 0; }\n"
        "int hipblasLtDestroy(void *h) { return 0; }\n"
        "int hipblasLtGetVersion(void *h, int *v) { *v = 100401; return 0; }\n",
        "librocblas.so": "#include <string.h>\n"
        'static const char v[] = "5.6.0.8d1ae90e";\n'
        "int rocblas_get_version_string_size(unsigned long *n) "
        "{ *n = sizeof v; return 0; }\n"
        "int rocblas_get_version_string(char *b, unsigned long n) "
        "{ strncpy(b, v, n); return 0; }\n",
    }
    for name, source in sources.items():
        (tmp_path / f"{name}.c").write_text(source)
        subprocess.run(
            [cc, "-shared", "-fPIC", "-o", str(tmp_path / name), str(tmp_path / f"{name}.c")],
            check=True,
        )
    return tmp_path


def test_versions_are_probed_from_the_libraries(stand_in_libraries):
    found = versions.probe(
        {
            "STRATA_HIPBLASLT_LIBRARY": str(stand_in_libraries / "libhipblaslt.so"),
            "STRATA_ROCBLAS_LIBRARY": str(stand_in_libraries / "librocblas.so"),
        },
        timeout_s=60,
    )
    assert found["hipblaslt"].version == "100401"
    assert found["rocblas"].version == "5.6.0.8d1ae90e"


def test_no_libraries(tmp_path):
    found = versions.probe(
        {
            "STRATA_HIPBLASLT_LIBRARY": str(tmp_path / "none.so"),
            "STRATA_ROCBLAS_LIBRARY": str(tmp_path / "none.so"),
        },
        timeout_s=60,
    )
    missing = tmp_path / "none.so"
    assert found["hipblaslt"] == LibraryVersion(
        None, f"STRATA_HIPBLASLT_LIBRARY={missing}: no such file"
    )
    assert found["rocblas"] == LibraryVersion(
        None, f"STRATA_ROCBLAS_LIBRARY={missing}: no such file"
    )


# Refusals at run time.


def test_a_refused_solution_falls_back_and_is_disabled_after_three(capsys):
    table = read(FIXTURES / HIP_NAME)
    dispatch = TunedDispatch(table, "hipBLASLt", verbose=True)
    key = (512, 4096, 2048, "bf16", "qkv")
    ran = []

    def run(solution):
        ran.append(solution)
        if solution == "56537":
            raise SolutionRefused("invalid value")
        return solution

    assert [dispatch.launch(key, run) for _ in range(5)] == ["default"] * 5
    assert ran == ["56537", "default"] * 3 + ["default"] * 2
    assert dispatch.fallbacks == 3 and dispatch.tuned_launches == 0
    assert dispatch.launch((2048, 8192, 2048, "bf16", "gate_up"), lambda s: s) == "61102"
    assert dispatch.launch((1, 1, 1, "bf16", "x"), lambda s: s) == "default"
    assert dispatch.summary() == (
        "hipBLASLt: tuned_launches=1 fallbacks=3 default_launches=6 disabled=1"
    )
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "strata-core: hipBLASLt: 512 4096 2048 bf16 qkv -> 56537"
    assert (
        lines[1:3]
        == [
            "strata-core: hipBLASLt: solution 56537 for 512 4096 2048 bf16 qkv refused (invalid "
            "value); fallback to the default for this call"
        ]
        * 2
    )
    assert lines[3] == (
        "strata-core: warning: hipBLASLt: solution 56537 for 512 4096 2048 bf16 qkv refused 3 "
        "times (invalid value); the default runs from now on"
    )


# Calibration.


class FakeClock:
    now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    """calibrate's clock, advanced only by SleepyTunable: timings without machine noise."""
    fake = FakeClock()
    monkeypatch.setattr("strata_core.tuning.calibrate.time.perf_counter", fake)
    return fake


class SleepyTunable:
    """Solutions that take known times, to check the method, not the machine."""

    kind = HOST
    arch = "x86-64-v3"
    version = "test"

    def __init__(self, clock, delays, wrong=()):
        self.clock = clock
        self.delays = delays
        self.wrong = wrong
        self.prepared = []
        self.order = []

    def cases(self):
        return [
            Case((64, 8, 8, "f32", "light"), 1.0, "light"),
            Case((512, 8, 8, "f32", "heavy"), 100.0, "heavy"),
        ]

    def candidates(self, case):
        return list(self.delays)

    def prepare(self, case):
        self.prepared.append(case.key[-1])

        def run(solution):
            self.order.append(solution)
            self.clock.now += self.delays[solution]
            return 1.0 if solution in self.wrong else 0.0

        return run

    seconds = staticmethod(wall_clock)


def test_calibration_method(clock):
    tunable = SleepyTunable(
        clock, {"default": 0.004, "fast": 0.002, "close": 0.0039, "bad": 0.001}, wrong={"bad"}
    )
    table, outcomes = calibrate(tunable, repeats=4)
    assert tunable.prepared[0] == "heavy"  # the heavy case warms up first
    assert [row.solution for row in table.rows] == ["fast", "fast"]
    assert outcomes[0].rejected == ("bad",)  # wrong output never wins
    measured = tunable.order[4 + 4 :]  # after warm-up and the checks
    rounds = [measured[i : i + 3] for i in range(0, 12, 3)]
    assert rounds == [
        ["default", "fast", "close"],
        ["fast", "close", "default"],
        ["close", "default", "fast"],
        ["default", "fast", "close"],
    ]


def test_a_winner_below_the_min_gain_is_written_as_default(clock):
    table, _ = calibrate(SleepyTunable(clock, {"default": 0.004, "close": 0.0039}), repeats=3)
    assert [row.solution for row in table.rows] == ["default", "default"]


def test_calibration_on_small_shapes_writes_a_table_the_lookup_takes(tmp_path):
    tunable = HostGemmTunable([(32, "qkv", 96, 64, "f32"), (64, "down", 64, 96, "f16")])
    table, outcomes = calibrate(tunable, repeats=3)
    path = tmp_path / HOST.file_name(tunable.arch, tunable.version)
    path.write_text(render(table))
    decision = decide_host(tunable.arch, tunable.version, [tmp_path])
    assert decision.used and decision.rows == 2
    assert decision.loaded.rows == read(path).rows
    assert all(not o.rejected for o in outcomes)
    assert decision.log[0].startswith(f"host BLAS tuning enabled (2 rows, {tunable.arch}")


@pytest.mark.parametrize("kind", [HIPBLASLT, ROCBLAS, CUBLASLT])
def test_an_unknown_version_names_only_options_that_exist(kind):
    reason = find_table(kind, "gfx1201", LibraryVersion(None, "no library"), []).reason
    options = {a for action in cli._parser()._subparsers._group_actions[0].choices["plan"]._actions
               for a in action.option_strings}  # fmt: skip
    named = set(re.findall(r"--[a-z][a-z-]*", reason))
    assert named <= options
    assert named == ({f"--{kind.name}"} if kind is not CUBLASLT else set())


@pytest.mark.parametrize(
    ("hipblaslt", "fault", "said"),
    [
        ("libm.so.6", None, "libm.so.6: has no hipblasLtCreate; not a hipBLASLt library"),
        (None, "rocblas-huge-version", None),
        (None, "print-on-load", None),
    ],
)
def test_one_bad_library_spoils_only_its_own_version(stand_in, monkeypatch, hipblaslt, fault, said):
    env = {
        "STRATA_HIPBLASLT_LIBRARY": hipblaslt or stand_in,
        "STRATA_ROCBLAS_LIBRARY": stand_in,
        "STRATA_CUBLASLT_LIBRARY": stand_in,
    }
    if fault:
        monkeypatch.setenv("STAND_IN_FAULT", fault)
    found = versions.probe(env, 60)
    assert found["cublaslt"].version == "120804"
    if hipblaslt:
        assert found["hipblaslt"] == LibraryVersion(None, said)
        assert found["rocblas"].version == "5.6.0.8d1ae90e"
    elif fault == "rocblas-huge-version":
        assert found["hipblaslt"].version == "100401"
        assert found["rocblas"].version is None
        assert found["rocblas"].how.endswith(
            "rocblas_get_version_string_size says 9223372036854775807 bytes; a version is short"
        )
    else:
        assert found["rocblas"].version == "5.6.0.8d1ae90e"
