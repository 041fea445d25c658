"""Every file strata reads is read within a bound: a sysfs attribute as at most a page, every
other kind within its own bound, and a file past it refused in one line, unread."""

import json
import marshal
import os
import subprocess
import sys
import threading
from functools import partial

import pytest
from cli_runner import strata_core

from strata_core import answer_cache, bounded
from strata_core.answer_cache import Recorder
from strata_core.child import ChildFailed, run_json_forked
from strata_core.testing.sysfs import R9700, RX_7900_XTX, write_sysfs

run = partial(strata_core, check=False)
NODES = "class/kfd/kfd/topology/nodes"
#: a KFD properties file as a hostile or broken driver could show it: 20 GB, sparse
HUGE = 20 << 30
PAGE_TOO_MANY = (
    f"over {bounded.SYSFS_ATTRIBUTE.limit} bytes, the most strata reads of a sysfs attribute"
)


def test_a_file_past_its_bound_is_refused_unread(tmp_path):
    huge = tmp_path / "properties"
    huge.write_text("gfx_target_version 120001\n")
    os.truncate(huge, HUGE)
    with pytest.raises(bounded.TooLarge) as refused:
        bounded.read_bytes(huge, bounded.SYSFS_ATTRIBUTE)
    assert refused.value.strerror == PAGE_TOO_MANY
    assert refused.value.filename == str(huge)


def test_a_pipe_is_read_to_one_byte_past_its_bound(tmp_path):
    """A file whose size says nothing (a pipe, a /proc file) is counted as it is read."""
    bound = bounded.Bound(100, "a test file")
    read_end, write_end = os.pipe()
    writer = threading.Thread(target=lambda: os.write(write_end, b"x" * 4096))
    writer.start()
    try:
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            with pytest.raises(bounded.TooLarge):
                bounded.read_handle(pipe, bound, "a pipe")
            assert len(pipe.read(4096)) == 4096 - 101
    finally:
        writer.join()
        os.close(write_end)


def test_a_file_within_its_bound_is_read_whole(tmp_path):
    page = tmp_path / "page"
    page.write_bytes(b"x" * bounded.SYSFS_ATTRIBUTE.limit)
    assert Recorder().read_text(page, bounded.SYSFS_ATTRIBUTE) == page.read_text()


def test_a_huge_kfd_node_is_one_line_the_other_cards_are_found_and_nothing_is_cached(tmp_path, env):
    root = write_sysfs(tmp_path / "sys", [R9700, RX_7900_XTX])
    huge = root / NODES / "2/properties"
    os.truncate(huge, HUGE)
    args = ("devices", "--json", "--sysfs", str(root))
    first = run(*args, env=env)
    assert first.returncode == 0, first.stderr
    answer = json.loads(first.stdout)
    assert [card["gfx"] for card in answer["devices"]] == ["gfx1201"]
    assert answer["warnings"] == [f"{huge}: cannot read ({PAGE_TOO_MANY}); node skipped"]
    # an input it could not read whole is one the answer cannot be checked against
    assert not list((tmp_path / "answer-cache").glob("answer-*.marshal"))
    os.truncate(huge, 0)  # the node as the driver shows it again
    assert json.loads(run(*args, env=env).stdout)["warnings"] != answer["warnings"]


def test_a_huge_drm_counter_is_one_line(tmp_path, env):
    root = write_sysfs(tmp_path / "sys", [R9700])
    counter = root / "class/drm/renderD128/device/mem_info_vram_total"
    os.truncate(counter, HUGE)
    answer = json.loads(run("devices", "--json", "--sysfs", str(root), env=env).stdout)
    assert answer["warnings"] == [f"{counter}: cannot read ({PAGE_TOO_MANY})"]
    assert [card["gfx"] for card in answer["devices"]] == ["gfx1201"]


def test_a_huge_tuning_table_is_one_line(tmp_path, env):
    table = tmp_path / "huge.txt"
    table.write_text("# strata tuning table\n")
    os.truncate(table, HUGE)
    result = run("table", "check", str(table), env=env)
    assert (result.returncode, result.stdout.strip()) == (
        1, f"{table}:1: cannot read: over 16 MiB, the most strata reads of a tuning table"
    )  # fmt: skip


#: reads a cache entry in a Python of its own and prints what it held and the most memory
#: that Python took (ru_maxrss, KiB)
READ_ENTRY = """
import resource, sys
from strata_core import answer_cache
folder, name = sys.argv[1].rsplit("/", 1)
held = answer_cache.read_entry({"STRATA_CACHE_DIR": folder}, name)
print(repr(held)[:40], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_a_huge_cache_entry_is_a_miss_read_no_further(tmp_path):
    """A marshal file that says it holds 2 GiB is passed by, without taking 2 GiB."""
    entry = tmp_path / "answer-huge.marshal"
    entry.write_bytes(b"s" + (0x7FFFFFFF).to_bytes(4, "little"))
    os.truncate(entry, 1 << 31)
    said = subprocess.run(
        [sys.executable, "-c", READ_ENTRY, str(entry)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert said[0] == "None"
    assert int(said[1]) < 256 << 10


def test_a_childs_answer_past_its_bound_is_one_line():
    big = bounded.CHILD_ANSWER.limit

    def probe(env):
        return {"padding": "x" * big}

    with pytest.raises(ChildFailed) as failed:
        run_json_forked(probe, {}, 60, "NVML probe", Recorder())
    assert str(failed.value) == (
        "NVML probe gave an answer over 64 MiB, the most strata reads of a child's answer"
    )
