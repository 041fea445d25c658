from pathlib import Path

import pytest

from strata_core.answer_cache import Recorder
from strata_core.bounded import AMDGPU_IDS
from strata_core.detect import amdgpu_ids
from strata_core.detect.amdgpu_ids import MarketingNames, parse_names, read_names

#: an excerpt of libdrm's current table (tests/fixtures/kfd/amdgpu_ids/SOURCE.md)
EXCERPT = Path(__file__).parent / "fixtures/kfd/amdgpu_ids/amdgpu.ids"


@pytest.fixture
def said(monkeypatch):
    """The debug lines amdgpu_ids says, with their fields."""
    lines: list[tuple[str, dict]] = []
    monkeypatch.setattr(amdgpu_ids.log, "debug", lambda m, **f: lines.append((m, f)))
    return lines


@pytest.fixture
def names():
    return read_names(EXCERPT, Recorder())


def test_exact_device_and_revision(names):
    assert names.name_of(0x744C, 0xC8) == "Radeon RX 7900 XTX"
    assert names.name_of(0x744C, 0xCE) == "Radeon RX 7900 GRE"
    assert names.name_of(0x73EF, 0xC1) == "Radeon RX 6650 XT"
    assert names.name_of(0x7551, 0xC0) == "Radeon AI PRO R9700"


def test_the_leading_amd_is_dropped_and_the_rest_kept(names):
    assert names.name_of(0x74A1, 0) == "Instinct MI300X"
    assert names.name_of(0x7448, 0) == "Radeon Pro W7900"
    assert names.name_of(0x6860, 0) == "Radeon Instinct MI25"
    assert names.name_of(0x15DD, 0x81) == "Ryzen Embedded V1807B with Radeon Vega Gfx"


def test_a_revision_unknown_or_not_listed_takes_the_name_all_rows_agree_on(names):
    assert names.name_of(0x74A0, None) == "Instinct MI300A"
    assert names.name_of(0x74A0, 0x55) == "Instinct MI300A"


def test_rows_that_disagree_give_no_name_without_the_exact_revision(names):
    assert names.name_of(0x744C, None) is None
    assert names.name_of(0x744C, 0x01) is None
    assert names.name_of(0x15DD, None) is None


def test_unknown_device_or_none(names):
    assert names.name_of(0x1234, 0) is None
    assert names.name_of(None, 0xC8) is None


def test_the_first_of_two_rows_for_one_device_and_revision_wins_as_in_libdrm(names):
    assert names.name_of(0x15D8, 0x91) == "Radeon Vega 3 Graphics"


def test_a_row_written_with_spaces_is_read(names):
    assert names.name_of(0x7481, 0xC7) == "Steam Machine"


def test_comments_blanks_and_the_version_are_not_counted_odd_lines_are():
    text = (
        "# List of AMDGPU IDs\n"
        "\n"
        "1.0.0\n"
        "7551,\tC0,\tAMD Radeon AI PRO R9700\n"
        "this line has no commas at all\n"
        "7551,\tXX,\tnot a hex revision\n"
        "164E,\t00,\t\n"
        "   # an indented comment\n"
        "2.0.0\n"
        "7590,\tC0,\tAMD Radeon RX 9060 XT\n"
    )
    names = parse_names(text)
    assert len(names) == 2
    assert names.skipped == 4  # the three odd lines and a second version line
    assert names.name_of(0x7551, 0xC0) == "Radeon AI PRO R9700"
    assert names.name_of(0x7590, 0xC0) == "Radeon RX 9060 XT"


def test_no_path_reads_nothing():
    recorder = Recorder()
    assert len(read_names(None, recorder)) == 0
    assert recorder.files == {}


def test_a_missing_file_gives_no_names_says_nothing_and_is_recorded(tmp_path, said):
    recorder = Recorder()
    path = tmp_path / "amdgpu.ids"
    names = read_names(path, recorder)
    assert len(names) == 0 and names.name_of(0x744C, 0xC8) is None
    assert said == []
    assert recorder.files == {str(path): None}  # the answer cache sees it missing


def test_the_file_is_read_through_the_recorder(tmp_path):
    recorder = Recorder()
    read_names(EXCERPT, recorder)
    assert isinstance(recorder.files[str(EXCERPT)], list)  # its content, for the cache


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: p.mkdir(), "cannot read ("),
        (
            lambda p: p.write_bytes(b"1.0.0\n" * (AMDGPU_IDS.limit // 6 + 1)),
            "cannot read (over 1 MiB",
        ),
        (lambda p: p.write_bytes(b"1.0.0\n7551,\tC0,\tAMD \xff\n"), "not UTF-8 text (byte 20)"),
    ],
    ids=["a folder", "past its bound", "not UTF-8"],
)
def test_an_unreadable_table_gives_no_names_and_one_debug_line(tmp_path, said, make, why):
    path = tmp_path / "amdgpu.ids"
    make(path)
    names = read_names(path, Recorder())
    assert len(names) == 0
    assert len(said) == 1
    message, fields = said[0]
    assert message.startswith(f"{path}: {why}")
    assert message.endswith("no marketing names from it")
    assert fields == {"kind": "detection"}


def test_odd_lines_are_said_in_one_debug_line(tmp_path, said):
    path = tmp_path / "amdgpu.ids"
    path.write_text("1.0.0\nnonsense\n7551,\tC0,\tAMD Radeon AI PRO R9700\nmore nonsense\n")
    assert read_names(path, Recorder()).name_of(0x7551, 0xC0) == "Radeon AI PRO R9700"
    assert said == [
        (f"{path}: 2 lines are not 'DEVICE, REVISION, NAME'; skipped", {"kind": "detection"})
    ]


def test_the_empty_table():
    assert MarketingNames().name_of(0x744C, 0xC8) is None
