"""Property: any input to a parser gives a result or problem lines naming the file (and the
line where there is one), never an exception."""

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata_core.answer_cache import Recorder
from strata_core.detect import kfd
from strata_core.detect.visibility import parse_override, visible_devices
from strata_core.errors import StrataError
from strata_core.plan import config as run_config
from strata_core.plan import profile
from strata_core.tuning.tables import TableError, parse

LINE = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
TEXT = st.lists(LINE, max_size=30).map("\n".join)
#: lines near the real formats, so that the parsers get past their first checks
PROPERTY_LINE = st.tuples(
    st.sampled_from(["gfx_target_version", "simd_count", "location_id", "domain", "x", ""]),
    st.one_of(st.integers(-5, 1 << 70).map(str), LINE),
).map(" ".join)
TABLE_LINE = st.lists(
    st.one_of(st.sampled_from(["512", "0", "-1", "4096", "bf16", "qkv", "²", "1e9", "nan"]), LINE),
    max_size=9,
).map(" ".join)
HEADERS = st.sampled_from(
    [
        "# strata-tuning columns=T,N,K,dtype,op,solution,default_us,best_us min_gain=1.05\n"
        "STRATA_HIPBLASLT_TUNING_V1 gfx1151 100401\n",
        "STRATA_ROCBLAS_TUNING_V1 gfx1030 5.6\n",
        "",
    ]
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _file(text: str, name: str) -> Path:
    folder = Path(tempfile.mkdtemp())
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@SETTINGS
@given(st.one_of(TEXT, st.lists(PROPERTY_LINE, max_size=20).map("\n".join)))
def test_kfd_properties(text):
    path = _file(text, "properties")
    problems: list[str] = []
    fields = kfd.parse_properties(path, problems, Recorder())
    assert fields is None or all(isinstance(v, int) and v >= 0 for v in fields.values())
    assert all(p.startswith(str(path)) for p in problems)
    assert len(problems) <= kfd.MAX_LINE_PROBLEMS + 2


@SETTINGS
@given(HEADERS, st.lists(TABLE_LINE, max_size=12).map("\n".join))
def test_tables(header, body):
    path = Path("gfx1151-hipblaslt-100401.txt")
    try:
        parse(header + body, path)
    except TableError as refused:
        assert all(re.match(rf"{re.escape(str(path))}(:\d+)?: ", p) for p in refused.problems)


@pytest.mark.parametrize(
    ("name", "load"),
    [("strata.toml", run_config.load), ("strata-hip.json", run_config.load),
     ("profile.toml", profile.load)],
)  # fmt: skip
@SETTINGS
@given(text=TEXT)
def test_run_config_and_profile(name, load, text):
    path = _file(text, name)
    try:
        load(path)
    except StrataError as refused:
        assert str(refused).startswith(str(path))


@SETTINGS
@given(
    st.lists(
        st.one_of(st.none(), st.text("0123456789abcdef", min_size=16, max_size=16)), max_size=6
    ),
    st.dictionaries(
        st.sampled_from(["ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"]),
        st.one_of(LINE, st.lists(st.integers(-2, 8).map(str)).map(",".join)),
    ),
)
def test_visibility_variables(uuids, env):
    seen = visible_devices(uuids, env)
    assert len(set(seen.order)) == len(seen.order)
    assert set(seen.order) | set(seen.hidden) == set(range(len(uuids)))


@SETTINGS
@given(LINE)
def test_override_values(value):
    try:
        assert parse_override(value).startswith("gfx")
    except ValueError as refused:
        assert str(refused)
