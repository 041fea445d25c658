"""Commands import what they use and no more: structlog where a line is said, cattrs where a
file is malformed, the command line's parser and the report module where a command runs, and
on a repeated command answered from the cache only the launcher and the cache."""

import subprocess
import sys

import pytest

from strata_core.testing.sysfs import R9700, write_sysfs

HEAVY = (
    "strata_core.cli.main", "argparse", "structlog", "cattrs", "strata_core.cli.report", "attrs"
)
#: runs a command line in this process and prints the heavy modules it imported
PROBE = f"""
import contextlib, io, sys
from strata_core.launcher import main
with contextlib.redirect_stdout(io.StringIO()):
    main(sys.argv[1:])
print(" ".join(m for m in {HEAVY!r} if m in sys.modules))
"""


def imported(env, *argv):
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


@pytest.fixture
def tree(tmp_path):
    return str(write_sysfs(tmp_path / "sys", [R9700]))


def test_version_builds_no_parser(env):
    assert imported(env, "--version") == set()


@pytest.mark.parametrize("command", [["plan", "--json"], ["devices", "--json"], ["devices"]])
def test_a_command_that_says_nothing_loads_no_logging_and_no_cattrs(env, tree, command):
    used = imported(env | {"STRATA_CACHE": "0"}, *command, "--sysfs", tree)
    assert used == {"strata_core.cli.main", "argparse", "strata_core.cli.report", "attrs"}


def test_a_line_said_loads_structlog(env, tree):
    used = imported(env | {"STRATA_CACHE": "0"}, "plan", "-v", "--json", "--sysfs", tree)
    assert "structlog" in used


def test_an_answer_from_the_cache_loads_nothing_heavy(env, tree):
    imported(env, "plan", "--json", "--sysfs", tree)
    assert imported(env, "plan", "--json", "--sysfs", tree) == set()


def test_an_answer_from_the_cache_imports_no_typing(env, tree):
    imported(env, "plan", "--json", "--sysfs", tree)
    probe = PROBE.replace(f"{HEAVY!r}", "('typing', 're')")
    result = subprocess.run(
        [sys.executable, "-c", probe, "plan", "--json", "--sysfs", tree],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == []
