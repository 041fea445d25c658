"""One logging layer: every diagnostic on stderr through structlog, for people or machines."""

import json
import shlex

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
    assert any("carries code for gfx1201" in line for line in verbose)


@pytest.mark.parametrize(("level", "info"), [("warning", False), ("debug", True)])
def test_strata_log_level(pc, level, info):
    lines = strata_core("run", "--", "true", env=pc | {"STRATA_LOG_LEVEL": level}).stderr
    assert (f"strata-core: {START}" in lines.splitlines()) == info


def test_a_bad_log_level_is_one_line(pc):
    result = strata_core("plan", env=pc | {"STRATA_LOG_LEVEL": "loud"}, check=False)
    assert result.returncode == 2
    assert result.stderr == (
        "strata-core: STRATA_LOG_LEVEL=loud: expected one of debug, info, warning, error\n"
    )


def test_json_lines_for_machines(pc):
    lines = [json.loads(line) for line in run_engine(pc, "--log-format", "json")]
    assert {"level": "info", "msg": START, "kind": "start_line"} in lines
    warning = next(line for line in lines if line["level"] == "warning")
    assert warning["msg"].startswith("STRATA_NOT_A_SWITCH (set in the environment)")


def test_logfmt_lines_for_machines(pc):
    lines = run_engine(pc, "--log-format", "logfmt")
    fields = [dict(part.split("=", 1) for part in shlex.split(line)) for line in lines]
    assert {"level": "info", "msg": START, "kind": "start_line"} in fields
    assert all(line.startswith("level=") for line in lines)


def test_errors_keep_their_one_line(pc):
    result = strata_core("plan", "--device", "gfx9000", env=pc, check=False)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("strata-core: --device gfx9000: not a target strata knows")
