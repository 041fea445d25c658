"""The answer cache: a repeated plan or devices is answered from it only while everything it
depended on is unchanged."""

import json
import marshal
import os
from functools import partial

import pytest
from cli_runner import strata_core

from strata_core import answer_cache
from strata_core.testing.sysfs import R9700, RX_7900_XTX, write_sysfs

SENTINEL = "answered from the cache\n"


run = partial(strata_core, check=False)


@pytest.fixture
def cached(tmp_path, env):
    """Run `plan --json` once, then mark its cache entry so that a hit is visible."""
    root = write_sysfs(tmp_path / "sys", [R9700])
    config = tmp_path / "strata.toml"
    config.write_text('[env]\nSTRATA_HC_Q8 = "0"\n')
    env = env | {"STRATA_SYSFS": str(root), "STRATA_CONFIG": str(config)}
    args = ("plan", "--json")
    first = run(*args, env=env)
    assert first.returncode == 0
    (entry,) = (tmp_path / "answer-cache").glob("answer-*.marshal")
    stored = marshal.loads(entry.read_bytes())
    assert stored["stdout"] == first.stdout
    stored["stdout"] = SENTINEL
    entry.write_bytes(marshal.dumps(stored))
    return env, args, root, config


def test_a_repeated_command_is_answered_from_the_cache(cached):
    env, args, _, _ = cached
    assert run(*args, env=env).stdout == SENTINEL


def test_a_changed_sysfs_file_is_seen(cached):
    env, args, root, _ = cached
    counter = root / "class/drm/renderD128/device/mem_info_vram_total"
    counter.write_text(f"{16 << 30}\n")
    answer = json.loads(run(*args, env=env).stdout)
    assert answer["device"]["vram_bytes"] == 16 << 30


def test_a_new_kfd_node_is_seen(cached, tmp_path):
    env, args, root, _ = cached
    write_sysfs(tmp_path / "other", [R9700, RX_7900_XTX])
    nodes = root / "class/kfd/kfd/topology/nodes"
    (nodes / "2").mkdir()
    (nodes / "2/properties").write_text(
        (tmp_path / "other/class/kfd/kfd/topology/nodes/2/properties").read_text()
    )
    assert run(*args, env=env).stdout != SENTINEL


def test_a_changed_config_is_seen(cached):
    env, args, _, config = cached
    config.write_text('[env]\nSTRATA_HC_Q8 = "1"\n')
    answer = json.loads(run(*args, env=env).stdout)
    assert answer["switches"]["STRATA_HC_Q8"]["value"] == "1"


def test_a_changed_environment_is_seen(cached):
    env, args, _, _ = cached
    answer = json.loads(run(*args, env=env | {"STRATA_HIP_ROUTER_OLD": "1"}).stdout)
    assert answer["switches"]["STRATA_HIP_ROUTER_OLD"]["source"] == "user"


def test_the_cache_can_be_turned_off(cached):
    env, args, _, _ = cached
    assert run(*args, env=env | {"STRATA_CACHE": "0"}).stdout != SENTINEL


def test_errors_are_not_cached(tmp_path, env):
    env = env | {"STRATA_SYSFS": str(tmp_path)}
    assert run("plan", "--device", "gfx9000", env=env).returncode == 2
    assert not list((tmp_path / "answer-cache").glob("answer-*.marshal"))


def test_a_changed_profile_is_seen(cached, tmp_path):
    env, args, _, _ = cached
    profile = tmp_path / "profile.toml"
    profile.write_text('name = "p"\ncontext_cells = 100000\n')
    with_profile = (*args, "--profile", str(profile))
    first = json.loads(run(*with_profile, env=env).stdout)
    assert "100000 cells" in first["kernels"]["topk"]["reason"]
    profile.write_text('name = "p"\ncontext_cells = 200000\n')
    again = json.loads(run(*with_profile, env=env).stdout)
    assert "200000 cells: 'Past about 135K cells" in again["kernels"]["topk"]["reason"]


def test_the_cache_keeps_a_bounded_size_and_evicts_the_oldest(cached, tmp_path):
    env, args, _, _ = cached
    folder = tmp_path / "answer-cache"
    (marked,) = folder.glob("answer-*.marshal")
    old = folder / "answer-00000000.marshal"
    old.write_bytes(b"x" * (answer_cache.MAX_BYTES - 1))
    os.utime(old, (1, 1))
    assert run(*args, "--kv", "int8", env=env).returncode == 0
    left = set(folder.glob("answer-*.marshal"))
    assert old not in left and marked in left and len(left) == 2
    assert sum(p.stat().st_size for p in left) <= answer_cache.MAX_BYTES


@pytest.mark.parametrize("fault", ["entry is a folder", "write fails"])
def test_a_store_that_fails_leaves_no_temporary_file(tmp_path, monkeypatch, fault):
    env = {"STRATA_CACHE_DIR": str(tmp_path)}
    argv = ["plan", "--json"]
    entry = answer_cache._entry_path(answer_cache._key(argv, env), env)
    if fault == "entry is a folder":
        os.makedirs(entry)
    else:

        def full(*_):
            raise OSError(27, "File too large")

        monkeypatch.setattr(answer_cache.marshal, "dump", full)
    answer_cache.store(argv, env, "out", "", answer_cache.Recorder())
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
