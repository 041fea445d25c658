"""Tuning table formats: good tables, every error kind with its line, whole-table refusal."""

import shutil
import subprocess
from pathlib import Path

import pytest

from strata_core.cli.tune_table import parse_case
from strata_core.tuning.kinds import CUBLASLT, HIPBLASLT, ROCBLAS
from strata_core.tuning.tables import TableError, parse, read, render

FIXTURES = Path(__file__).parent / "fixtures/tables"
HIP = FIXTURES / "gfx1151-hipblaslt-100401.txt"
ROC = FIXTURES / "gfx1030-rocblas-5.6.0.8d1ae90e.txt"
HEAD = (
    "# strata-tuning columns=T,N,K,dtype,op,solution,default_us,best_us min_gain=1.05\n"
    "STRATA_HIPBLASLT_TUNING_V1 gfx1151 100401\n"
)
ROC_HEAD = (
    "# strata-tuning columns=T,N,K,ldy,solution,default_us,best_us min_gain=1.05\n"
    "STRATA_ROCBLAS_TUNING_V1 gfx1030 5.6.0.8d1ae90e\n"
)


def test_hipblaslt_table():
    table = read(HIP)
    assert (table.kind, table.arch, table.version, table.min_gain) == (
        HIPBLASLT,
        "gfx1151",
        "100401",
        1.05,
    )
    assert table.solutions() == {
        (512, 4096, 2048, "bf16", "qkv"): "56537",
        (2048, 8192, 2048, "bf16", "gate_up"): "61102",
    }
    assert [r.line for r in table.rows] == [3, 4, 5]
    assert table.rows[0].default_us == 410.5


def test_rocblas_table():
    table = read(ROC)
    assert (table.kind, table.arch, table.version) == (ROCBLAS, "gfx1030", "5.6.0.8d1ae90e")
    assert table.solutions() == {(8192, 4096, 2048, 4096): "1342", (256, 2048, 2048, 2048): "117"}


def test_cublaslt_solutions_are_configurations(tmp_path):
    head = (
        "# strata-tuning columns=T,N,K,dtype,op,solution,default_us,best_us min_gain=1.05\n"
        "STRATA_CUBLASLT_TUNING_V1 sm_90 130100\n"
    )
    good = tmp_path / "sm_90-cublaslt-130100.txt"
    good.write_text(head + "512 4096 2048 f16 prompt 66:20:35:1:0:0:1:0:3 27.72 26.16\n")
    table = read(good)
    assert (table.kind, table.arch, table.version) == (CUBLASLT, "sm_90", "130100")
    assert table.solutions() == {(512, 4096, 2048, "f16", "prompt"): "66:20:35:1:0:0:1:0:3"}
    with pytest.raises(TableError) as refused:
        parse(head + "512 4096 2048 f16 prompt 56537 27.72 26.16\n", Path("t.txt"))
    assert refused.value.problems == (
        "t.txt:3: solution must be a cuBLASLt solution or 'default', got '56537'",
    )


def test_a_winner_exactly_at_min_gain_is_a_winner():
    """A row names its solution from a gain of min_gain (1.05) on: at 1.05 the solution is
    kept and 'default' refused; just below, the other way round."""
    at_edge = parse(HEAD + "512 4096 2048 bf16 qkv 56537 105 100\n", Path("t.txt"))
    assert at_edge.solutions() == {(512, 4096, 2048, "bf16", "qkv"): "56537"}
    with pytest.raises(TableError) as default_at_edge:
        parse(HEAD + "512 4096 2048 bf16 qkv default 105 100\n", Path("t.txt"))
    assert default_at_edge.value.problems == (
        "t.txt:3: 'default' with a best time 1.050x faster than the default names no winner",
    )
    below = parse(HEAD + "512 4096 2048 bf16 qkv default 104.99 100\n", Path("t.txt"))
    assert below.solutions() == {} and len(below.rows) == 1


def test_file_names_drop_trailing_dots():
    assert ROCBLAS.file_name("gfx1030", "5.6.0.") == "gfx1030-rocblas-5.6.0.txt"
    assert HIPBLASLT.file_name("gfx1151", "100401") == "gfx1151-hipblaslt-100401.txt"


def test_render_round_trip():
    table = read(HIP)
    assert parse(render(table), HIP).rows == table.rows


@pytest.mark.skipif(shutil.which("awk") is None, reason="awk is not installed")
def test_the_reference_awk_line_makes_valid_cases():
    awk = 'NR>2 {printf " --case %s,%s,%s,%s,%s", $1, $5, $2, $3, $4}'
    out = subprocess.run(["awk", awk, str(HIP)], capture_output=True, text=True, check=True).stdout
    cases = out.split("--case")[1:]
    assert [c.strip() for c in cases] == [
        "512,qkv,4096,2048,bf16",
        "512,o,2048,2048,bf16",
        "2048,gate_up,8192,2048,bf16",
    ]
    assert parse_case("512,qkv,4096,2048,f16") == (512, "qkv", 4096, 2048, "f16")


def problems(text, head=HEAD, name="t.txt"):
    with pytest.raises(TableError) as error:
        parse(head + text if head is not None else text, Path(name))
    return list(error.value.problems)


ROW = "512 4096 2048 bf16 qkv 56537 410.50 120.25\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            ROW + "512 4096 2048 bf16\n",
            "t.txt:4: expected 8 columns (T N K dtype op solution default_us best_us), got 4",
        ),
        (
            ROW + "512 4096 2048 int4 qkv default 1 1\n",
            "t.txt:4: dtype must be one of bf16, f16, f32, got 'int4'",
        ),
        (
            ROW + "512 4096 2048 bf16 QKV default 1 1\n",
            "t.txt:4: op must be a lower-case name, got 'QKV'",
        ),
        (
            ROW + "0 4096 2048 bf16 o default 1 1\n",
            "t.txt:4: T must be a positive integer, got '0'",
        ),
        (ROW + "512 4096 x bf16 o default 1 1\n", "t.txt:4: K must be a positive integer, got 'x'"),
        (
            ROW + "\uff15\uff11\uff12 4096 2048 bf16 o default 1 1\n",
            "t.txt:4: T must be a positive integer, got '\uff15\uff11\uff12'",
        ),
        (
            ROW + "512 4096 2048 bf16 o fast 100 50\n",
            "t.txt:4: solution must be a hipBLASLt solution or 'default', got 'fast'",
        ),
        (
            ROW + "512 4096 2048 bf16 o default -3 1\n",
            "t.txt:4: default_us must be a positive time in microseconds, got '-3'",
        ),
        (
            ROW + "512 4096 2048 bf16 o default 1 nan\n",
            "t.txt:4: best_us must be a positive time in microseconds, got 'nan'",
        ),
        (
            ROW + "512 4096 2048 bf16 o 77 100 99\n",
            "t.txt:4: solution 77 gains 1.010x over the "
            "default, less than min_gain 1.05; the row must say 'default'",
        ),
        (
            ROW + "512 4096 2048 bf16 o default 100 50\n",
            "t.txt:4: 'default' with a best time 2.000x faster than the default names no winner",
        ),
        (ROW + ROW, "t.txt:4: the same shape as line 3"),
        (ROW + "\n" + ROW.replace("qkv", "o"), "t.txt:4: empty line among the rows"),
        ("", "t.txt:2: no rows"),
    ],
)
def test_row_errors_name_their_line(text, expected):
    assert problems(text) == [expected]


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (
            "STRATA_HIPBLASLT_TUNING_V1 gfx1151 100401\n",
            "t.txt:1: a table needs a comment line and an identity line before its rows",
        ),
        (
            "# made by hand\nSTRATA_HIPBLASLT_TUNING_V1 gfx1151 100401\n" + ROW,
            "t.txt:1: expected '# strata-tuning columns=...', got '# made by hand'",
        ),
        (
            HEAD.replace("STRATA_HIPBLASLT_TUNING_V1", "STRATA_CUBLAS_V1") + ROW,
            "t.txt:2: expected '<STRATA_HIPBLASLT_TUNING_V1|STRATA_ROCBLAS_TUNING_V1|"
            "STRATA_HOST_TUNING_V1|STRATA_CUBLASLT_TUNING_V1> <arch> <version>', got "
            "'STRATA_CUBLAS_V1 gfx1151 100401'",
        ),
        (HEAD.replace("gfx1151", "navi31") + ROW, "t.txt:2: 'navi31' is not an architecture name"),
        (HEAD.replace("100401", "1.4.1") + ROW, "t.txt:2: '1.4.1' is not a hipBLASLt version"),
        (
            HEAD.replace("columns=T,N,K,", "columns=T,K,N,") + ROW,
            "t.txt:1: columns must be T,N,K,dtype,op,solution,default_us,best_us; got "
            "T,K,N,dtype,op,solution,default_us,best_us",
        ),
        (
            HEAD.replace("min_gain=1.05", "min_gain=0.9") + ROW,
            "t.txt:1: min_gain must be a number of at least 1, got '0.9'",
        ),
    ],
)
def test_header_errors_name_their_line(head, expected):
    assert problems(head, head=None)[0] == expected


def test_rocblas_buckets():
    text = (
        ROC_HEAD + "128 4096 2048 4096 default 10 10\n"
        "512 4096 2048 4096 default 10 10\n"
        "512 2048 2048 2048 default 10 10\n"
        "16384 2048 2048 2048 default 10 10\n"
    )
    assert problems(text, head=None) == [
        "t.txt:3: T 128 is outside the token buckets 256 ... 8192",
        "t.txt:6: T 16384 is outside the token buckets 256 ... 8192",
        "t.txt:3: shape N=4096 K=2048 ldy=4096 has no row for T 16384",
        "t.txt:5: shape N=2048 K=2048 ldy=2048 has no row for T 128",
    ]


def test_one_bad_row_refuses_the_whole_table_with_every_problem():
    found = problems(
        ROW
        + "512 4096 2048 bf16\n"
        + "1 1 1 f32 o default 1 1\n"
        + "512 4096 2048 bf16 o fast 100 50\n"
    )
    assert [p.split(":")[1] for p in found] == ["4", "6"]


def test_unreadable_table(tmp_path):
    with pytest.raises(TableError, match=r"missing.txt:1: cannot read"):
        read(tmp_path / "missing.txt")
