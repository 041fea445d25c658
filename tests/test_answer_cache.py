"""The answer cache: a repeated plan or devices is answered from it only while everything it
depended on is unchanged."""

import json
import marshal
import os
from functools import partial
from pathlib import Path

import pytest
from cli_runner import strata_core

from strata_core import answer_cache, files
from strata_core.api import plugin_index
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


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("HSA_OVERRIDE_GFX_VERSION", "12.0.1"),
        ("ROCR_VISIBLE_DEVICES", "0"),
        ("HIP_VISIBLE_DEVICES", "0"),
        ("CUDA_VISIBLE_DEVICES", "0"),
        ("ROCM_PATH", "/nonexistent/rocm"),
        ("LD_LIBRARY_PATH", "/nonexistent/lib"),
        ("OMP_NUM_THREADS", "1"),
    ],
)
def test_each_variable_that_can_change_an_answer_is_part_of_its_key(cached, variable, value):
    """The runtime's variables, where its libraries are looked for and OpenMP's: an answer
    stored without one is not given with it set, even where the answer comes out the same."""
    env, args, _, _ = cached
    assert run(*args, env=env | {variable: value}).stdout != SENTINEL


def test_an_answer_that_read_what_cannot_be_checked_is_not_stored(tmp_path):
    """A recorder that was refused (a pipe, a detector plugin's own reads) stores nothing."""
    env = {"STRATA_CACHE_DIR": str(tmp_path)}
    checked = answer_cache.Recorder()
    answer_cache.store(["plan"], env, "answer\n", "", checked)
    assert answer_cache.lookup(["plan"], env)["stdout"] == "answer\n"
    refused = answer_cache.Recorder()
    refused.refuse("the run config is a pipe")
    answer_cache.store(["devices"], env, "answer\n", "", refused)
    assert answer_cache.lookup(["devices"], env) is None


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
    entry = tmp_path / answer_cache._entry_name(answer_cache._key(argv, env))
    if fault == "entry is a folder":
        entry.mkdir()
    else:

        def full(*_):
            raise OSError(27, "File too large")

        monkeypatch.setattr(files.os, "write", full)
    answer_cache.store(argv, env, "out", "", answer_cache.Recorder())
    assert [p.name for p in tmp_path.iterdir()] == ([entry.name] if entry.is_dir() else [])


def test_a_config_replaced_while_plan_runs_is_not_kept(cached, monkeypatch):
    """The config is read, then replaced by a rename before the answer is stored: the answer
    (the old value) is not kept, so the next plan says what the file says now."""
    env, args, _, config = cached
    from strata_core.cli import plan as plan_command

    planned = plan_command.make_plan

    def replaced_meanwhile(request):
        outcome = planned(request)
        new = config.with_name("new.toml")
        new.write_text('[env]\nSTRATA_HC_Q8 = "1"\n')
        new.rename(config)
        return outcome

    monkeypatch.setattr(plan_command, "make_plan", replaced_meanwhile)
    during = json.loads(run(*args, "--kv", "int8", env=env).stdout)
    assert during["switches"]["STRATA_HC_Q8"]["value"] == "0"  # what it read
    monkeypatch.undo()
    after = json.loads(run(*args, "--kv", "int8", env=env).stdout)
    assert after["switches"]["STRATA_HC_Q8"]["value"] == "1"


def test_a_file_changed_while_it_is_read_makes_the_answer_one_not_kept(tmp_path, monkeypatch):
    path = tmp_path / "properties"
    path.write_text("simd_count 128\n")
    read = answer_cache.os.read

    def replaced_while_read(fd, size):
        data = read(fd, size)
        if data:
            other = tmp_path / "other"
            other.write_text("simd_count 64\n")
            other.rename(path)
        return data

    recorder = answer_cache.Recorder()
    monkeypatch.setattr(answer_cache.os, "read", replaced_while_read)
    assert recorder.read_text(path) == "simd_count 128\n"
    monkeypatch.undo()
    assert recorder.refusals == [f"{path} changed while it was read"]


def test_a_file_read_twice_with_two_contents_makes_the_answer_one_not_kept(tmp_path):
    path = tmp_path / "properties"
    path.write_text("a 1\n")
    recorder = answer_cache.Recorder()
    recorder.read_text(path)
    path.write_text("a 2\n")
    recorder.read_text(path)
    assert recorder.refusals == [f"{path} changed while the command ran"]


def test_a_missing_file_that_appears_is_seen(tmp_path):
    """A file the command found missing is recorded as missing: the answer is no longer
    given once it is there."""
    env, argv = {"STRATA_CACHE_DIR": str(tmp_path / "cache")}, ["devices"]
    recorder = answer_cache.Recorder()
    with pytest.raises(FileNotFoundError):
        recorder.read_text(tmp_path / "product_name")
    answer_cache.store(argv, env, "out", "", recorder)
    assert answer_cache.lookup(argv, env)["stdout"] == "out"
    (tmp_path / "product_name").write_text("Radeon\n")
    assert answer_cache.lookup(argv, env) is None


def test_a_fifo_refused_as_not_regular_is_seen_once_put_back(env, tmp_path):
    """A FIFO where a KFD properties file belongs is refused, and the answer without that
    card is not kept: once the file is back, the card is listed."""
    root = write_sysfs(tmp_path / "sys", [R9700, RX_7900_XTX])
    properties = root / "class/kfd/kfd/topology/nodes/1/properties"
    text = properties.read_text()
    properties.unlink()
    os.mkfifo(properties)
    args = ("devices", "--json", "--sysfs", str(root))
    without = json.loads(run(*args, env=env).stdout)
    assert [d["gfx"] for d in without["devices"]] == ["gfx1100"]
    properties.unlink()
    properties.write_text(text)
    again = json.loads(run(*args, env=env).stdout)
    assert [d["gfx"] for d in again["devices"]] == ["gfx1201", "gfx1100"]


def test_a_link_planted_at_a_predictable_temporary_name_redirects_nothing(env, tmp_path):
    """The answer and the plugin index were written through `<entry>.<pid>.tmp`: links
    planted at those names (this process is the one that runs the command) must leave the
    file they point at as it was."""
    root = write_sysfs(tmp_path / "sys", [R9700])
    argv = ["devices", "--sysfs", str(root)]
    folder = tmp_path / "answer-cache"
    folder.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.utime(victim, ns=(1_000_000_000, 1_000_000_000))
    before = victim.read_bytes(), victim.stat().st_mtime_ns
    entries = [
        answer_cache._entry_name(answer_cache._key(argv, env)),
        plugin_index._index_name("strata.arch"),
    ]
    for name in entries:
        (folder / f"{name}.{os.getpid()}.tmp").symlink_to(victim)
    assert run(*argv, env=env).returncode == 0
    assert (victim.read_bytes(), victim.stat().st_mtime_ns) == before
    for name in entries:
        assert marshal.loads((folder / name).read_bytes())  # written, whole, where it belongs


def test_the_cache_folder_is_made_private(env, tmp_path):
    root = write_sysfs(tmp_path / "sys", [R9700])
    run("devices", "--sysfs", str(root), env=env)
    folder = tmp_path / "answer-cache"
    assert folder.stat().st_mode & 0o777 == 0o700
    assert {p.stat().st_mode & 0o777 for p in folder.iterdir()} == {0o600}


AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a folder to another user")
#: a user who is not the one running the tests (nobody)
OTHER_UID = 65534


def open_to_others(path, how):
    """Make ``path`` one that another user can write: ``everyone`` (mode o+w, which any
    user can do) or ``owned`` (given to another user: root only)."""
    if how == "everyone":
        path.chmod(path.stat().st_mode | 0o002)
    else:
        os.chown(path, OTHER_UID, OTHER_UID)


HOW = [pytest.param("everyone"), pytest.param("owned", marks=AS_ROOT)]


@pytest.fixture
def planted(cached):
    """A planted answer of `plan --json`, one that the cache gives while its folder is
    this user's alone: its engine_env carries LD_PRELOAD."""
    env, args, _, _ = cached
    (entry,) = (Path(env["STRATA_CACHE_DIR"])).glob("answer-*.marshal")
    stored = marshal.loads(entry.read_bytes())
    answer = json.loads(run(*args, env=env | {"STRATA_CACHE": "0"}).stdout)
    answer["engine_env"]["LD_PRELOAD"] = "/tmp/evil.so"
    stored["stdout"] = json.dumps(answer) + "\n"
    entry.write_bytes(marshal.dumps(stored))
    entry.chmod(0o600)
    assert "LD_PRELOAD" in json.loads(run(*args, env=env).stdout)["engine_env"]  # it is given
    return env, args, entry


def _warnings(stderr):
    return [line for line in stderr.splitlines() if line.startswith("strata-core: warning:")]


@pytest.mark.parametrize("how", HOW)
def test_a_cache_folder_another_user_can_write_is_not_used(planted, how):
    """One warning, and the command goes on uncached: the planted answer is not given and
    nothing is written into the folder."""
    env, args, entry = planted
    folder = entry.parent
    open_to_others(folder, how)
    before = sorted((p.name, p.stat().st_mtime_ns) for p in folder.iterdir())
    for _ in range(2):  # each command says it once
        result = run(*args, env=env)
        assert result.returncode == 0
        assert "LD_PRELOAD" not in json.loads(result.stdout)["engine_env"]
        (warning,) = _warnings(result.stderr)
        assert warning.startswith(f"strata-core: warning: the answer cache's folder {folder} is ")
        assert warning.endswith(
            ": not used (another user could plant answers in it); the command goes on uncached"
        )
    assert sorted((p.name, p.stat().st_mtime_ns) for p in folder.iterdir()) == before


def test_the_warning_is_said_in_the_log_format_asked_for(planted):
    env, args, entry = planted
    open_to_others(entry.parent, "everyone")
    result = run(*args, "--log-format", "json", env=env)
    (line,) = result.stderr.splitlines()
    said = json.loads(line)
    assert said["level"] == "warning" and said["msg"].startswith("the answer cache's folder ")


@pytest.mark.parametrize("how", HOW)
def test_a_cache_entry_another_user_can_write_is_not_used(planted, how):
    env, args, entry = planted
    open_to_others(entry, how)
    result = run(*args, env=env)
    assert "LD_PRELOAD" not in json.loads(result.stdout)["engine_env"]
    (warning,) = _warnings(result.stderr)
    assert warning.startswith(f"strata-core: warning: the answer cache's entry {entry} is ")
    assert warning.endswith(": not used; the command goes on uncached")


@pytest.mark.parametrize("how", HOW)
def test_a_plugin_index_in_a_folder_another_user_can_write_is_not_used(env, tmp_path, how):
    """A planted index names a plugin that is not installed: listed while the folder is this
    user's alone, not once another user can write it."""
    run("plugins", env=env)
    folder = tmp_path / "answer-cache"
    index = folder / plugin_index._index_name("strata.arch")
    stored = marshal.loads(index.read_bytes())
    stored["entry_points"].append(("planted", "os", "getcwd", ("planted", "6.6.6")))
    index.write_bytes(marshal.dumps(stored))
    assert "planted" in run("plugins", env=env).stdout
    open_to_others(folder, how)
    result = run("plugins", env=env)
    assert "planted" not in result.stdout
    (warning,) = _warnings(result.stderr)
    assert warning.startswith(f"strata-core: warning: the answer cache's folder {folder} is ")


@pytest.mark.parametrize("how", HOW)
def test_example_trees_are_not_written_into_a_folder_another_user_can_write(env, tmp_path, how):
    folder = tmp_path / "answer-cache"
    folder.mkdir(mode=0o700)
    open_to_others(folder, how)
    result = run("devices", "--json", "--sysfs", "example:r9700-780m", env=env)
    assert [d["gfx"] for d in json.loads(result.stdout)["devices"]] == ["gfx1201", "gfx1103"]
    assert len(_warnings(result.stderr)) == 1
    assert list(folder.iterdir()) == []


def test_a_fifo_where_a_file_is_looked_for_makes_the_answer_one_not_kept(tmp_path):
    """./strata.toml as a FIFO is no run config, and an answer that depends on it is not
    kept: what is there cannot be read as a regular file."""
    fifo = tmp_path / "strata.toml"
    os.mkfifo(fifo)
    recorder = answer_cache.Recorder()
    assert recorder.is_file(fifo) is False
    assert recorder.refusals == [f"{fifo} cannot be read as a regular file"]


def test_a_stored_answer_replaced_by_a_link_is_not_written_through(cached, tmp_path):
    """Nothing in the cache folder is ever written through: an entry that has become a link to
    a file elsewhere is replaced by the next store, and that file keeps its bytes and mode."""
    env, args, root, _ = cached
    (entry,) = (tmp_path / "answer-cache").glob("answer-*.marshal")
    victim = tmp_path / "bashrc"
    victim.write_text("alias ll='ls -l'\n")
    victim.chmod(0o644)
    entry.unlink()
    entry.symlink_to(victim)
    (root / "class/drm/renderD128/device/mem_info_vram_total").write_text("1\n")  # a miss
    assert run(*args, env=env).returncode == 0
    assert victim.read_text() == "alias ll='ls -l'\n" and victim.stat().st_mode & 0o777 == 0o644
    assert not entry.is_symlink() and marshal.loads(entry.read_bytes())["stdout"]


def test_a_stored_answer_that_is_a_folder_is_no_answer_and_no_traceback(cached, tmp_path):
    env, args, _, _ = cached
    (entry,) = (tmp_path / "answer-cache").glob("answer-*.marshal")
    entry.unlink()
    entry.mkdir()
    result = run(*args, env=env)
    assert result.returncode == 0 and result.stderr == "" and result.stdout != SENTINEL
    assert json.loads(result.stdout)["plugin"] == "hip_rdna4"
