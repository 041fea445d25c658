"""One logging layer: every diagnostic on stderr, for people or (through structlog) machines."""

import json
import os
import pty
import shlex
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from cli_runner import strata_core

from strata_core.testing.sysfs import R9700, write_sysfs

START = (
    "hipBLASLt tuning table: none (off by default on gfx1201: a table changes rounding, so "
    "packaged engines take it by default only on gfx1151; STRATA_HIPBLASLT_TABLE=on takes it)"
)


@pytest.fixture
def pc(tmp_path, env):
    root = write_sysfs(tmp_path / "sys", [R9700])
    return env | {"STRATA_SYSFS": str(root), "STRATA_NOT_A_SWITCH": "1"}


def run_engine(pc, *options):
    """`run -- true`: the notes, warnings and start lines, and no workload."""
    return strata_core("run", *options, "--", "true", env=pc).stderr.splitlines()


def test_for_people_a_prefix_and_the_level_of_a_warning(pc):
    lines = run_engine(pc)
    assert f"strata-core: {START}" in lines  # the page's start line, verbatim
    assert (
        "strata-core: warning: STRATA_NOT_A_SWITCH (set in the environment) is no switch that "
        "strata knows"
    ) in lines


def test_quiet_keeps_warnings_only_and_verbose_adds_debug(pc):
    quiet = run_engine(pc, "-q")
    assert quiet and all(line.startswith("strata-core: warning: ") for line in quiet)
    verbose = run_engine(pc, "-v")
    assert set(run_engine(pc)) < set(verbose)
    debug = [line for line in verbose if "carries code for gfx1201" in line]
    assert debug and all(line.startswith("strata-core: debug: ") for line in debug)


@pytest.mark.parametrize(("level", "info"), [("warning", False), ("debug", True)])
def test_strata_log_level(pc, level, info):
    lines = strata_core("run", "--", "true", env=pc | {"STRATA_LOG_LEVEL": level}).stderr
    assert (f"strata-core: {START}" in lines.splitlines()) == info


def test_a_bad_log_level_is_one_line(pc):
    result = strata_core("plan", env=pc | {"STRATA_LOG_LEVEL": "loud"}, check=False)
    assert result.returncode == 2
    assert result.stderr == (
        "strata-core: error: STRATA_LOG_LEVEL=loud: expected one of debug, info, warning, error\n"
    )


def timed(fields: dict) -> dict:
    """The fields of a line for machines less its time, which must be ISO 8601 in UTC."""
    when = datetime.fromisoformat(fields.pop("timestamp").replace("Z", "+00:00"))
    assert when.utcoffset() == timedelta(0)
    return fields


def test_json_lines_for_machines(pc):
    lines = [timed(json.loads(line)) for line in run_engine(pc, "--log-format", "json")]
    assert {"level": "info", "msg": START, "kind": "start_line"} in lines
    warning = next(line for line in lines if line["level"] == "warning")
    assert warning["msg"].startswith("STRATA_NOT_A_SWITCH (set in the environment)")


def test_logfmt_lines_for_machines(pc):
    lines = run_engine(pc, "--log-format", "logfmt")
    fields = [timed(dict(part.split("=", 1) for part in shlex.split(line))) for line in lines]
    assert {"level": "info", "msg": START, "kind": "start_line"} in fields
    assert all(line.startswith("level=") for line in lines)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("plan", "--device", "gfx9000"), "--device gfx9000: not a target strata knows"),
        (("plan", "--kv", "bogus"), "plan: argument --kv: invalid choice: 'bogus'"),
        (("plgins",), "'plgins' is not a command"),
    ],
)
def test_an_error_is_one_line_labelled_as_an_error(pc, args, line):
    result = strata_core(*args, env=pc, check=False)
    assert result.returncode == 2
    (said,) = result.stderr.splitlines()
    assert said.startswith(f"strata-core: error: {line}")


def plan_on_a_full_stdout(pc, *options):
    """`strata-core plan OPTIONS > /dev/full` as a shell runs it."""
    with open("/dev/full", "w") as full:
        return subprocess.run(
            [sys.executable, "-m", "strata_core", "plan", *options],
            env=pc,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )


def test_a_full_standard_output_is_an_error_line(pc):
    result = plan_on_a_full_stdout(pc)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "strata-core: error: cannot write to standard output (No space left on device)"
    )
    for cached in (False, True):  # an answer from the cache is said in the chosen format too
        if cached:
            strata_core("plan", "--log-format", "json", env=pc)
        result = plan_on_a_full_stdout(pc, "--log-format", "json")
        assert result.returncode == 2
        last = timed(json.loads(result.stderr.splitlines()[-1]))
        assert last == {
            "level": "error",
            "msg": "cannot write to standard output (No space left on device)",
        }


def test_usage_errors_are_said_in_the_chosen_format(pc):
    result = strata_core("plan", "--kv", "bogus", "--log-format", "json", env=pc, check=False)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    fields = timed(json.loads(line))
    assert fields["level"] == "error"
    assert fields["msg"].startswith("plan: argument --kv: invalid choice: 'bogus'")


def test_options_before_the_command(pc):
    assert strata_core("-q", "run", "--", "true", env=pc).stderr.startswith(
        "strata-core: warning: "
    )
    lines = strata_core("--log-format", "json", "run", "--", "true", env=pc).stderr.splitlines()
    assert all(json.loads(line)["level"] for line in lines)
    verbose = strata_core("-v", "run", "--", "true", env=pc).stderr
    assert "strata-core: debug: " in verbose


def test_run_shows_its_progress_on_a_real_terminal_and_quiet_does_not(env, tmp_path):
    """The progress line is for a person at a terminal (here a pseudo-terminal, with the
    line's delay at zero so that every phase is drawn); -q keeps it off."""
    tiny = Path(__file__).parent / "fixtures" / "profiles" / "tiny.toml"
    launch = (
        "import sys; from strata_core.cli import progress; progress.DELAY_S = 0.0; "
        "from strata_core.launcher import main; sys.exit(main(sys.argv[1:]))"
    )

    def on_a_terminal(*options):
        ours, theirs = pty.openpty()
        command = [sys.executable, "-c", launch, "run", *options, "--sysfs", str(tmp_path),
                   "--profile", str(tiny)]  # fmt: skip
        with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=theirs) as ran:
            os.close(theirs)
            said = b""
            while chunk := _read(ours):
                said += chunk
            assert ran.wait(timeout=300) == 0
        os.close(ours)
        return said.decode()

    drawn = on_a_terminal()
    assert "\rstrata-core: running the workload: decode step 1 of 3 (0 s)\x1b[K" in drawn
    assert "\rstrata-core: checking every result against numpy" in drawn
    assert "running the workload" not in on_a_terminal("-q")


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except OSError:  # the terminal's other side closed
        return b""


def test_help_says_how_an_error_line_reads(env):
    top = strata_core("--help", env=env).stdout
    assert "errors as\n'strata-core: error: LINE'" in top
