"""The one way strata writes a file (strata_core.files): whole or not at all, through no
planted link, never over a file it may not replace, keeping a replaced file's owner and mode,
synced to the disk in the order that makes it last."""

import errno
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cli_runner import strata_core

from strata_core import files
from strata_core.errors import StrataError
from strata_core.files import Exists, write_atomic

AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a file to another user")
#: a user who is not the one running the tests (nobody)
OTHER_UID = 65534
PLAN = ("plan", "--device", "gfx1201", "--toml")
TABLE = ("tune", "--host", "--case", "32,qkv,96,64,f32", "--repeats", "3")


def untouched(path: Path):
    """What proves a file was not written: its content and mtime."""
    return path.read_bytes(), path.stat().st_mtime_ns


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


def test_a_new_file_gets_the_umasks_mode_and_a_replaced_one_keeps_its_own(tmp_path):
    new, kept = tmp_path / "new.toml", tmp_path / "kept.toml"
    old_umask = os.umask(0o027)
    try:
        write_atomic(new, "a = 1\n")
        kept.write_text("old = 1\n")
        kept.chmod(0o604)
        write_atomic(kept, "b = 2\n")
    finally:
        os.umask(old_umask)
    assert new.stat().st_mode & 0o7777 == 0o640
    assert kept.stat().st_mode & 0o7777 == 0o604 and kept.read_text() == "b = 2\n"


def test_without_replace_an_existing_name_is_never_written(tmp_path):
    """Exclusive: a file, or a link (dangling too), already at the name is left as it was."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    before = untouched(victim)
    (tmp_path / "link").symlink_to(victim)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for name in ("victim", "link", "dangling"):
        with pytest.raises(Exists, match="the file exists; nothing was changed"):
            write_atomic(tmp_path / name, "planted = 1\n", replace=False)
    assert untouched(victim) == before
    assert not (tmp_path / "nowhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "link", "victim"]


def test_without_hard_links_the_name_is_still_taken_exclusively(tmp_path, monkeypatch):
    """Where the file system has no hard links (FAT), the name is claimed by an exclusive
    create, then replaced by the whole file."""

    def no_links(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(files.os, "link", no_links)
    target = tmp_path / "strata.toml"
    write_atomic(target, "first = 1\n", replace=False)
    with pytest.raises(Exists):
        write_atomic(target, "second = 2\n", replace=False)
    assert target.read_text() == "first = 1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["strata.toml"]


def test_the_temporary_name_cannot_be_guessed(tmp_path, monkeypatch):
    """Two writes of one target use two names, each created exclusively and never through
    a link."""
    opened = []
    real_open = os.open

    def spy(path, flags, *rest, **kw):
        if os.path.basename(path).startswith(".strata-"):
            opened.append((os.path.basename(path), flags))
        return real_open(path, flags, *rest, **kw)

    monkeypatch.setattr(files.os, "open", spy)
    write_atomic(tmp_path / "a", "1")
    write_atomic(tmp_path / "a", "2")
    (first, flags), (second, _) = opened
    assert first != second
    assert flags & os.O_EXCL and flags & os.O_CREAT and flags & os.O_NOFOLLOW


def test_plan_output_without_force_refuses_an_existing_file(env, tmp_path):
    target = tmp_path / "strata.toml"
    target.write_text("mine = 1\n")
    before = untouched(target)
    result = strata_core(*PLAN, "--output", str(target), env=env, check=False)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"strata-core: error: --output {target}: the file exists; --force replaces it (its "
        "comments and all)"
    ]
    assert untouched(target) == before


def test_plan_output_force_keeps_the_mode(env, tmp_path):
    target = tmp_path / "strata.toml"
    target.write_text("old = 1\n")
    target.chmod(0o640)
    strata_core(*PLAN, "--output", str(target), "--force", env=env)
    assert target.read_text().startswith("# strata run config")
    assert target.stat().st_mode & 0o7777 == 0o640


@AS_ROOT
def test_plan_output_force_as_root_keeps_another_users_file_theirs(env, tmp_path):
    """As GNU sed -i: root replacing nobody's config leaves it nobody's."""
    target = tmp_path / "strata.toml"
    target.write_text("old = 1\n")
    os.chown(target, OTHER_UID, OTHER_UID)
    target.chmod(0o600)
    strata_core(*PLAN, "--output", str(target), "--force", env=env)
    st = target.stat()
    assert target.read_text().startswith("# strata run config")
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (OTHER_UID, OTHER_UID, 0o600)


def test_eight_writers_without_force_give_one_winner(env, tmp_path):
    """Eight `plan --toml --output F` at once: one writes F, each of the others says one
    error line and exits 2, and F is the winner's, whole."""
    target = tmp_path / "strata.toml"
    writers = [
        subprocess.Popen(
            [sys.executable, "-m", "strata_core", *PLAN, "--output", str(target)],
            env=env | {"STRATA_CACHE": "0", "STRATA_HIP_QUEUE_PRIME": str(n)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(8)
    ]
    results = [(w.wait(timeout=300), *w.communicate()) for w in writers]
    winners = [n for n, (status, _, _) in enumerate(results) if status == 0]
    assert len(winners) == 1, results
    for n, (status, out, err) in enumerate(results):
        if n in winners:
            continue
        assert status == 2 and out == ""
        assert err.splitlines()[-1] == (
            f"strata-core: error: --output {target}: the file exists; --force replaces it "
            "(its comments and all)"
        )
    winner = strata_core(*PLAN, env=env | {"STRATA_HIP_QUEUE_PRIME": str(winners[0])})
    assert target.read_text() == winner.stdout
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".strata-")] == []


def test_two_force_writers_at_once_leave_one_of_their_files_whole(env, tmp_path):
    """Two `plan --toml --force --output F` started together, round after round: F is always
    one writer's output, whole (the last rename wins), and no temporary file is left."""
    target = tmp_path / "strata.toml"
    outputs = [strata_core(*PLAN, env=env | {"STRATA_HIP_QUEUE_PRIME": str(n)}).stdout
               for n in range(2)]  # fmt: skip
    assert outputs[0] != outputs[1]
    for _ in range(5):
        writers = [
            subprocess.Popen(
                [sys.executable, "-m", "strata_core", *PLAN, "--force", "--output", str(target)],
                env=env | {"STRATA_HIP_QUEUE_PRIME": str(n)},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for n in range(2)
        ]
        assert [w.wait(timeout=300) for w in writers] == [0, 0]
        for writer in writers:
            writer.communicate()
        assert target.read_text() in outputs
    assert _temporaries(tmp_path) == []


def test_a_reader_beside_two_writers_replacing_a_file_sees_only_whole_files(tmp_path):
    """Two threads replacing one file as fast as they can, each with a file of its own byte:
    a reader opening it all the while reads one writer's file whole, every time."""
    target = tmp_path / "table.txt"
    size = 1 << 20
    target.write_bytes(b"o" * size)
    whole = {b"o" * size, b"a" * size, b"b" * size}
    stop = threading.Event()

    def writer(byte: bytes) -> None:
        while not stop.is_set():
            write_atomic(target, byte * size)

    threads = [threading.Thread(target=writer, args=(b,)) for b in (b"a", b"b")]
    for thread in threads:
        thread.start()
    try:
        seen = {target.read_bytes() for _ in range(300)}
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert seen <= whole
    assert target.read_bytes() in whole
    assert _temporaries(tmp_path) == []


def test_a_table_that_cannot_be_written_is_on_stdout_whole(env, tmp_path):
    """STRATA_TUNING_DIR naming a loop of links: the table measured is on stdout, one that
    `table check` takes (tests/fixtures/bad_inputs.toml has the error line)."""
    (tmp_path / "LOOP").symlink_to("LOOP")
    env = env | {"STRATA_TUNING_DIR": str(tmp_path / "LOOP")}
    result = strata_core(*TABLE, env=env, check=False)
    assert result.returncode == 2
    assert "the measured table is on stdout instead" in result.stderr.splitlines()[-1]
    kept = tmp_path / "kept.txt"
    kept.write_text(result.stdout)
    assert "\n32 96 64 f32 qkv " in result.stdout
    strata_core("table", "check", str(kept), env=env)
    assert os.readlink(tmp_path / "LOOP") == "LOOP"


#: a child that writes SIZE bytes of a new content over TARGET
KILLED_WRITER = """
import sys
from strata_core.files import write_atomic
write_atomic(sys.argv[1], bytes([0x6E]) * int(sys.argv[2]))
"""


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(".strata-")]


def test_a_write_killed_midway_leaves_the_old_file_whole(tmp_path):
    """A real writer of a large file, killed with SIGKILL while its data is half written:
    the target is the old file, every byte of it."""
    target = tmp_path / "table.txt"
    old = b"o" * (1 << 20)
    target.write_bytes(old)
    size = 512 << 20
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(target), str(size)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        temporaries = _temporaries(tmp_path)
        if temporaries and 0 < temporaries[0].stat().st_size < size:
            break
        time.sleep(0.001)
    else:
        child.kill()
        pytest.fail("the writer never started writing")
    child.send_signal(signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL
    assert target.read_bytes() == old
    (temporary,) = _temporaries(tmp_path)
    assert 0 < temporary.stat().st_size < size  # it was killed mid-way indeed


def test_a_write_killed_at_any_moment_leaves_one_file_whole(tmp_path):
    """Killed at moments spread over a whole write: the target is always the old file or the
    new one, never part of either."""
    size = 32 << 20
    target = tmp_path / "table.txt"
    for delay in (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8):
        old = b"o" * (size // 2)
        target.write_bytes(old)
        child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(target), str(size)])
        time.sleep(delay)
        child.kill()
        child.wait()
        data = target.read_bytes()
        assert data == old or data == b"n" * size, (delay, len(data))
        for temporary in _temporaries(tmp_path):
            temporary.unlink()


def test_an_output_path_through_a_link_and_dot_dot_is_resolved_as_the_kernel_does(env, tmp_path):
    """`--output a/../out.toml` where a is a link to elsewhere/sub: the shell's `>` (the kernel)
    writes elsewhere/out.toml, the parent of the link's target, not out.toml beside the link."""
    (tmp_path / "elsewhere" / "sub").mkdir(parents=True)
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "a").symlink_to(tmp_path / "elsewhere" / "sub")
    strata_core(*PLAN, "--output", "a/../out.toml", env=env, cwd=tmp_path / "here")
    assert (tmp_path / "elsewhere" / "out.toml").read_text().startswith("# strata run config")
    assert not (tmp_path / "here" / "out.toml").exists()
