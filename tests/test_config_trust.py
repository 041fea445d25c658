"""A run config that another user could change is refused, as git refuses a repository that
another user owns: a run config says which program starts (`exe`) and what it gets."""

import json
import os
import sys

import pytest
from cli_runner import strata_core

from strata_core.testing.sysfs import R9700, write_sysfs

AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a folder to another user")
#: a user who is not the one running the tests (nobody)
OTHER_UID = 65534

#: an engine that leaves a mark where it started
ENGINE = """
import pathlib, sys
pathlib.Path(sys.argv[0]).with_name("started").write_text("yes")
"""


@pytest.fixture
def shared(tmp_path):
    """A folder holding a run config whose exe is an engine beside it."""
    folder = tmp_path / "shared"
    folder.mkdir()
    engine = folder / "engine"
    engine.write_text(f"#!{sys.executable}\n{ENGINE}")
    engine.chmod(0o755)
    (folder / "strata.toml").write_text('exe = "./engine"\n')
    return folder


def open_to_others(path, how):
    if how == "everyone":
        path.chmod(path.stat().st_mode | 0o002)
    else:
        os.chown(path, OTHER_UID, OTHER_UID)


HOW = [pytest.param("everyone"), pytest.param("owned", marks=AS_ROOT)]


def test_a_config_in_the_users_own_folder_starts_its_exe(shared, env):
    strata_core("run", "--sysfs", str(shared), "--", env=env, cwd=shared)
    assert (shared / "started").read_text() == "yes"


@pytest.mark.parametrize("how", HOW)
def test_run_refuses_the_strata_toml_of_a_folder_another_user_can_write(shared, env, how):
    open_to_others(shared, how)
    result = strata_core("run", "--sysfs", str(shared), "--", env=env, cwd=shared, check=False)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    why = (
        f"writable by everyone (mode {shared.stat().st_mode & 0o7777:04o})"
        if how == "everyone"
        else f"owned by nobody (uid {OTHER_UID})"
    )
    assert line == (
        f"strata-core: error: strata.toml: refused as a run config: its folder {shared} is "
        f"{why}, so another user could change what strata starts; "
        f"STRATA_SAFE_CONFIG={shared}/strata.toml trusts it"
    )
    assert not (shared / "started").exists()


@pytest.mark.parametrize("how", HOW)
def test_a_named_config_another_user_can_write_is_refused(shared, env, how):
    config = shared / "strata.toml"
    open_to_others(config, how)
    result = strata_core("plan", "--config", str(config), env=env, check=False)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].startswith(
        f"strata-core: error: {config}: refused as a run config: it is "
    )


def test_a_link_to_a_config_in_a_folder_others_can_write_is_refused(shared, env, tmp_path):
    """Where the user's own link leads matters: the file there is the one read."""
    (tmp_path / "strata.toml").symlink_to(shared / "strata.toml")
    shared.chmod(0o777)
    result = strata_core("plan", env=env, cwd=tmp_path, check=False)
    assert result.returncode == 2
    assert f"its folder {shared} is writable by everyone (mode 0777)" in result.stderr


def test_a_sticky_folder_lets_no_one_replace_the_users_own_config(shared, env):
    """As in /tmp: others may add files but not replace this user's."""
    shared.chmod(0o1777)
    strata_core("run", "--sysfs", str(shared), "--", env=env, cwd=shared)
    assert (shared / "started").read_text() == "yes"


@pytest.mark.parametrize("named", ["path", "*"])
def test_strata_safe_config_trusts_it(shared, env, named):
    shared.chmod(0o777)
    safe = str(shared / "strata.toml") if named == "path" else "*"
    env = env | {"STRATA_SAFE_CONFIG": f"/elsewhere/strata.toml:{safe}"}
    result = strata_core("run", "--sysfs", str(shared), "--", env=env, cwd=shared)
    assert (shared / "started").read_text() == "yes"
    assert "STRATA_SAFE_CONFIG" not in result.stderr  # strata's own variable, no switch


def test_a_kept_answer_is_not_given_once_the_folder_is_opened_to_others(shared, env, tmp_path):
    root = write_sysfs(tmp_path / "sys", [R9700])
    (shared / "strata.toml").write_text('[env]\nSTRATA_HC_Q8 = "0"\n')
    args = ("plan", "--json", "--sysfs", str(root))
    first = json.loads(strata_core(*args, env=env, cwd=shared).stdout)
    assert first["switches"]["STRATA_HC_Q8"]["value"] == "0"
    assert list((tmp_path / "answer-cache").glob("answer-*.marshal"))  # kept
    shared.chmod(0o777)
    again = strata_core(*args, env=env, cwd=shared, check=False)
    assert again.returncode == 2 and "refused as a run config" in again.stderr
