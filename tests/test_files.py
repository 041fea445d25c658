"""Atomic writes."""

import pytest

from strata_core import files
from strata_core.errors import StrataError
from strata_core.files import write_atomic


def test_write_atomic_replaces_whole_and_leaves_nothing_behind(tmp_path):
    target = tmp_path / "strata.toml"
    target.write_text("old = 1\n")
    write_atomic(target, "new = 2\n")
    assert target.read_text() == "new = 2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["strata.toml"]


def test_write_atomic_failure_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "strata.toml"
    target.write_text("old = 1\n")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(StrataError) as failed:
        write_atomic(target, "new = 2\n")
    assert str(failed.value) == (
        f"{target}: cannot write (No space left on device); nothing was changed"
    )
    assert target.read_text() == "old = 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["strata.toml"]


def test_write_atomic_writes_bytes_as_they_are(tmp_path):
    target = tmp_path / "plot.png"
    write_atomic(target, b"\x89PNG\r\n\x00")
    assert target.read_bytes() == b"\x89PNG\r\n\x00"
