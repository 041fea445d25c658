"""The progress line: drawn on a person's terminal once a phase has lasted its delay, with
what the command does and how far it is, erased when the phase ends; other lines go above
it; -q, --json and a stderr that is no terminal get none."""

import io
import os
import sys
import time
from pathlib import Path

import pytest

from strata_core.cli import progress
from strata_core.cli.main import main
from strata_core.cli.progress import ProgressLine

TINY = Path(__file__).parent / "fixtures/profiles/tiny.toml"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def quick(monkeypatch):
    """Phases drawn after 50 ms, redrawn every 10 ms."""
    monkeypatch.setattr(progress, "DELAY_S", 0.05)
    monkeypatch.setattr(progress, "TICK_S", 0.01)


def test_a_short_phase_draws_nothing(quick):
    screen = Terminal()
    with ProgressLine(screen) as line:
        line("drawing the inputs")
        line("checking")
    assert screen.getvalue() == ""


def test_a_long_phase_is_drawn_then_erased(quick):
    screen = Terminal()
    with ProgressLine(screen) as line:
        line("running the workload", "decode step 3 of 16")
        time.sleep(0.2)
        line("running the workload", "decode step 4 of 16")
        time.sleep(0.1)
    said = screen.getvalue()
    assert "\rstrata-core: running the workload: decode step 3 of 16 (0 s)\x1b[K" in said
    assert "\rstrata-core: running the workload: decode step 4 of 16 (0 s)\x1b[K" in said
    assert said.endswith(progress.ERASE)


def test_what_else_is_said_goes_above_the_line(quick, monkeypatch):
    screen, before = Terminal(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", before)
    with ProgressLine(screen) as line:
        line("checking every result")
        time.sleep(0.1)
        print("strata-core: a note", file=sys.stderr)
        time.sleep(0.1)
    said = screen.getvalue()
    note = said.index("strata-core: a note\n")
    assert said[:note].endswith(progress.ERASE)  # the line was erased first
    assert "\rstrata-core: checking every result" in said[note:]  # and drawn again after
    assert sys.stderr is before  # given back


@pytest.fixture
def clean(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith(("STRATA_", "OMP_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("STRATA_HIP_PROBE", "0")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # nothing to measure
    return tmp_path


@pytest.mark.parametrize(("more", "drawn"), [((), True), (("-q",), False), (("--json",), False)])
def test_run_shows_its_phases_to_a_person(clean, monkeypatch, capsys, more, drawn):
    """Every phase drawn as it comes (no delay here)."""
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    assert main(["run", "--profile", str(TINY), "--sysfs", str(clean), *more]) == 0
    said = screen.getvalue()
    assert ("\rstrata-core: " in said) == drawn
    if drawn:
        for phase in (
            "drawing the workload's inputs",
            "measuring the DRAM read bandwidth",
            "running the workload: decode step 1 of 3",
            "running the workload: decode step 3 of 3",
            "running the workload: prompt step 2 of 2",
            "checking every result against numpy",
        ):
            assert f"\rstrata-core: {phase} (0 s)\x1b[K" in said
        assert said.endswith(progress.ERASE)


def test_no_terminal_no_line(quick, clean, monkeypatch):
    screen = io.StringIO()
    monkeypatch.setattr(sys, "stderr", screen)
    assert main(["run", "--profile", str(TINY), "--sysfs", str(clean)]) == 0
    assert "\r" not in screen.getvalue()
