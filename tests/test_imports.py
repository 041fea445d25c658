"""Commands import what they use and no more: structlog where a line for machines (logfmt,
JSON) is said, cattrs where a file is malformed, the command line's parser and the report
module where a command runs, and on a repeated command answered from the cache only the
launcher and the cache."""

import subprocess
import sys
from pathlib import Path

import pytest

from strata_core.testing.sysfs import R9700, write_sysfs

HEAVY = (
    "strata_core.cli.main", "argparse", "structlog", "cattrs", "strata_core.cli.report", "attrs"
)
#: runs a command line in this process and prints the modules it imported
PROBE = """
import contextlib, io, sys
from strata_core.launcher import main
with contextlib.redirect_stdout(io.StringIO()):
    main(sys.argv[1:])
print(" ".join(sys.modules))
"""


def imported(env, *argv, among=HEAVY):
    """Which of the modules ``among`` the command line imported."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split()) & set(among)


@pytest.fixture
def tree(tmp_path):
    return str(write_sysfs(tmp_path / "sys", [R9700]))


def test_version_builds_no_parser(env):
    assert imported(env, "--version") == set()


@pytest.mark.parametrize("command", [["plan", "--json"], ["devices", "--json"], ["devices"]])
def test_a_command_that_says_nothing_loads_no_logging_and_no_cattrs(env, tree, command):
    used = imported(env | {"STRATA_CACHE": "0"}, *command, "--sysfs", tree)
    assert used == {"strata_core.cli.main", "argparse", "strata_core.cli.report", "attrs"}


def test_a_line_for_people_loads_no_structlog_and_one_for_machines_does(env, tree):
    said = ("plan", "-v", "--json", "--sysfs", tree)
    assert "structlog" not in imported(env | {"STRATA_CACHE": "0"}, *said)
    assert "structlog" in imported(env | {"STRATA_CACHE": "0"}, "--log-format", "json", *said)


def test_an_answer_from_the_cache_loads_nothing_heavy(env, tree):
    imported(env, "plan", "--json", "--sysfs", tree)
    assert imported(env, "plan", "--json", "--sysfs", tree) == set()


def test_a_start_with_the_same_distributions_reads_no_package_metadata(env, tree):
    command = (env | {"STRATA_CACHE": "0"}, "plan", "--json", "--sysfs", tree)
    assert imported(*command, among=["importlib.metadata"]) == {"importlib.metadata"}
    assert imported(*command, among=["importlib.metadata"]) == set()


def test_an_answer_from_the_cache_imports_no_typing(env, tree):
    imported(env, "plan", "--json", "--sysfs", tree)
    assert imported(env, "plan", "--json", "--sysfs", tree, among=["typing", "re"]) == set()


#: the tuning tables' reader, their lookup, the libraries' versions and the child that probes
#: them
TUNING = (
    "strata_core.tuning.lookup",
    "strata_core.tuning.tables",
    "strata_core.tuning.versions",
    "strata_core.tuning.libraries",
    "strata_core.child",
)


def test_a_plan_for_the_host_looks_for_its_table_and_reads_none_that_is_not_there(env, tmp_path):
    """The host plan says whether a host BLAS table is taken: it looks one up by the name
    numpy's BLAS gives it, and loads no reader and starts no child where there is none."""
    bare = str(write_sysfs(tmp_path / "bare", []))
    command = ("plan", "--json", "--sysfs", bare)
    used = imported(env | {"STRATA_CACHE": "0"}, *command, among=TUNING)
    assert used == {"strata_core.tuning.lookup", "strata_core.tuning.versions",
                    "strata_core.tuning.libraries"}  # fmt: skip


def test_a_plan_for_a_card_with_no_table_to_read_loads_the_lookup_not_the_reader(env, tree):
    used = imported(env | {"STRATA_CACHE": "0"}, "plan", "--json", "--sysfs", tree, among=TUNING)
    assert used == {"strata_core.tuning.lookup", "strata_core.tuning.versions",
                    "strata_core.tuning.libraries"}  # fmt: skip


def test_a_plan_that_probes_no_library_starts_no_child_machinery(env, tree):
    command = ("plan", "--json", "--sysfs", tree)
    among = ["strata_core.child", "subprocess"]
    assert imported(env | {"STRATA_CACHE": "0"}, *command, among=among) == set()


@pytest.mark.parametrize("command", [["devices"], ["devices", "--json"]])
def test_devices_loads_detection_and_not_the_rest_of_the_pipeline(env, tree, command):
    rest = ["strata_core.plan.pipeline", "strata_core.plan.profile", "strata_core.plan.detection"]
    used = imported(env | {"STRATA_CACHE": "0"}, *command, "--sysfs", tree, among=rest)
    assert used == {"strata_core.plan.detection"}


def _child_entries() -> list[str]:
    """Every module that runs as ``python -m MODULE`` in a child (it ends with a main block)."""
    package = Path(__file__).resolve().parent.parent / "strata_core"
    return sorted(
        "strata_core." + ".".join(path.relative_to(package).with_suffix("").parts)
        for path in package.rglob("*.py")
        if 'if __name__ == "__main__":' in path.read_text()
        and path.name != "__main__.py"
    )


@pytest.mark.parametrize("entry", _child_entries())
def test_no_package_imports_the_child_entry_that_python_m_runs(entry):
    """runpy warns of an entry its package imported before it runs, and that warning was once
    the last line of a GPU child that died, said as the driver's reason."""
    package = entry.rpartition(".")[0]
    check = f"import sys, {package}; print({entry!r} in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False"]
