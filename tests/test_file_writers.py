"""Every writer of strata writes through strata_core.files, and each write is made to last in
the order that makes it last, seen through the calls it makes: the data written to a new
temporary file, that file synced, then renamed (or linked) to the target, then the folder
synced. A write that skipped a step, or took them in another order, fails here."""

import os
from pathlib import Path

import pytest
from cli_runner import strata_core

from strata_core import answer_cache
from strata_core.api import plugin_index
from strata_core.api.records import Workload
from strata_core.cli.tune_switches import write_winners
from strata_core.host import threads
from strata_core.testing.sysfs import R9700, write_sysfs

TABLE = ("tune", "--host", "--case", "32,qkv,96,64,f32", "--repeats", "3")


class Calls:
    """The file system calls made while it is installed, each with the path it acts on (a
    descriptor named by the path it was opened on)."""

    def __init__(self, monkeypatch):
        self.seen: list[tuple[str, ...]] = []
        self.paths: dict[int, str] = {}
        real = {
            name: getattr(os, name)
            for name in ("open", "write", "fsync", "close", "replace", "rename", "link", "unlink")
        }

        def opened(path, flags, *rest, **kw):
            fd = real["open"](path, flags, *rest, **kw)
            if kw.get("dir_fd") is None:
                self.paths[fd] = os.path.abspath(path)
                self.seen.append(("open", self.paths[fd]))
            return fd

        def on_fd(name):
            def call(fd, *rest):
                self.seen.append((name, self.paths.get(fd, f"fd {fd}")))
                if name == "close":
                    self.paths.pop(fd, None)
                return real[name](fd, *rest)

            return call

        def on_paths(name):
            def call(*paths, **kw):
                self.seen.append((name, *(os.path.abspath(p) for p in paths[:2])))
                return real[name](*paths, **kw)

            return call

        monkeypatch.setattr(os, "open", opened)
        for name in ("write", "fsync", "close"):
            monkeypatch.setattr(os, name, on_fd(name))
        for name in ("replace", "rename", "link", "unlink"):
            monkeypatch.setattr(os, name, on_paths(name))

    def assert_lasting_write(self, target: Path) -> None:
        """``target`` was written whole to a temporary file, synced, renamed or linked to its
        name, and its folder synced after that."""
        target_path = os.path.realpath(target)
        named = [
            i for i, call in enumerate(self.seen)
            if call[0] in ("replace", "link") and call[2] == target_path
        ]  # fmt: skip
        assert named, f"{target} was not written by a rename or a link: {self.seen}"
        at = named[-1]
        temp = self.seen[at][1]
        assert os.path.basename(temp).startswith(".strata-")
        before = self.seen[:at]
        opened = max(i for i, call in enumerate(before) if call == ("open", temp))
        writes = [i for i, call in enumerate(before) if call == ("write", temp) and i > opened]
        syncs = [i for i, call in enumerate(before) if call == ("fsync", temp) and i > opened]
        assert writes, "no data was written"
        assert syncs and syncs[-1] > writes[-1], "the file was not synced after its data"
        folder = os.path.dirname(target_path)
        after = self.seen[at + 1 :]
        assert ("fsync", folder) in after, "the folder was not synced after the rename"
        if self.seen[at][0] == "link":
            assert ("unlink", temp) in after


@pytest.fixture
def calls(monkeypatch):
    return Calls(monkeypatch)


@pytest.mark.parametrize("existing", [False, True], ids=["new", "--force over an old one"])
def test_plan_output(env, tmp_path, calls, existing):
    target = tmp_path / "strata.toml"
    if existing:
        target.write_text("old = 1\n")
    force = ("--force",) if existing else ()
    strata_core("plan", "--device", "gfx1201", "--toml", "--output", str(target), *force, env=env)
    calls.assert_lasting_write(target)


def test_tune_table(env, tmp_path, calls):
    strata_core(*TABLE, "--output", str(tmp_path / "table.txt"), env=env)
    calls.assert_lasting_write(tmp_path / "table.txt")


def test_tune_switches_winners(tmp_path, calls):
    config = tmp_path / "strata.toml"
    config.write_text("[env]\n")
    write_winners(config, {"STRATA_HC_Q8": "1"}, dry_run=False)
    calls.assert_lasting_write(config)


def test_the_answer_caches_entry_and_plugin_index(env, tmp_path, calls):
    root = write_sysfs(tmp_path / "sys", [R9700])
    strata_core("devices", "--sysfs", str(root), env=env)
    folder = Path(env["STRATA_CACHE_DIR"])
    (answer,) = folder.glob("answer-*.marshal")
    (index,) = folder.glob("entry-points-*.marshal")
    calls.assert_lasting_write(answer)
    calls.assert_lasting_write(index)
    assert plugin_index._index_name("strata.arch") == index.name


def test_the_host_threads_measurement(env, tmp_path, calls, monkeypatch):
    measured = {"default": {"1": 1.0, "2": 0.5}, "active": {"1": 1.0, "2": 0.6}}
    monkeypatch.setattr(threads, "measure", lambda *_: measured)
    monkeypatch.setattr(threads, "cores", lambda: 2)
    recorder = answer_cache.Recorder()
    chosen = threads.host_threads(0, env, None, Workload(), recorder, measure_now=True)
    assert chosen.threads == 2
    (kept,) = Path(env["STRATA_CACHE_DIR"]).glob("threads-*.marshal")
    calls.assert_lasting_write(kept)


def test_an_example_machines_tree(env, calls):
    """Built in a private folder, every file and folder of it synced, renamed whole to its
    name, then the cache's examples folder synced."""
    strata_core("devices", "--sysfs", "example:780m", env=env)
    (root,) = (Path(env["STRATA_CACHE_DIR"]) / "examples").glob("780m-*")
    root_path = os.path.realpath(root)
    (at,) = [
        i for i, call in enumerate(calls.seen) if call[0] == "rename" and call[2] == root_path
    ]
    building = calls.seen[at][1]
    before, after = calls.seen[:at], calls.seen[at + 1 :]
    inside = [
        os.path.join(building, os.path.relpath(os.path.join(folder, name), root_path))
        for folder, folders, names in os.walk(root_path)
        for name in (*folders, *names)
        if not os.path.islink(os.path.join(folder, name))
    ]
    assert len(inside) > 10
    assert [path for path in (*inside, building) if ("fsync", path) not in before] == []
    assert ("fsync", os.path.dirname(root_path)) in after
