"""The host kernels' threads: the user's, a host table's, else measured (one thread and every
core, OpenMP's own wait and the active one) and kept a day; a default never slower than one
thread."""

import json
import marshal
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from cli_runner import strata_core

from strata_core.host import thread_trial, threads
from strata_core.host.threads import ThreadChoice, choose, user_choice

TINY = Path(__file__).parent / "fixtures/profiles/tiny.toml"
run = partial(strata_core, check=False)


def times(default_1, default_n, active_1, active_n):
    return {"default": {"1": default_1, "2": default_n}, "active": {"1": active_1, "2": active_n}}


@pytest.mark.parametrize(
    ("measured", "threads", "policy"),
    [
        (times(1.0, 0.6, 1.0, 0.7), 2, None),  # more threads win, OpenMP's own wait
        (times(1.0, 0.97, 1.0, 0.98), 1, None),  # 3% is not the 5% it takes
        (times(1.0, 4.0, 1.0, 0.5), 2, "active"),  # a busy machine: only the active wait wins
        (times(1.0, 0.70, 1.0, 0.68), 2, None),  # the active wait, not 5% better: not taken
        # the load changed between the two: each against its own one-thread time
        (times(1.0, 0.9, 3.0, 2.0), 2, "active"),
        (times(1.0, 2.0, 1.0, 1.5), 1, None),
    ],
)
def test_a_choice_is_taken_where_it_is_faster_by_the_margin(measured, threads, policy):
    chosen = choose(measured, "measured now")
    assert (chosen.threads, chosen.wait_policy, chosen.source) == (threads, policy, "measured")
    assert chosen.reason.endswith("measured now")


def test_the_users_threads_win():
    env = {"OMP_NUM_THREADS": "3", "OMP_WAIT_POLICY": "ACTIVE"}
    assert user_choice(5, env) == ThreadChoice(5, "active", "user", "--threads 5")
    assert user_choice(0, env) == ThreadChoice(3, "active", "user", "OMP_NUM_THREADS=3")
    assert user_choice(0, {"OMP_NUM_THREADS": "4,2"}).threads == 4
    assert user_choice(0, {"OMP_NUM_THREADS": "many"}) is None
    assert user_choice(0, {}) is None


def test_the_trial_times_one_thread_and_every_core():
    measured = thread_trial.trial(64, 256, 2)
    assert set(measured) == {"1", str(threads.cores())}
    assert all(seconds > 0 for seconds in measured.values())


def host_run(env, tmp_path, *more):
    result = strata_core("run", "--json", "--profile", str(TINY), "--sysfs", str(tmp_path), *more,
                         env=env)  # fmt: skip
    return json.loads(result.stdout)


def plan_threads(env, tmp_path):
    """The threads a plan for the tiny workload (the one the runs here run) names."""
    plan = ("plan", "--json", "--profile", str(TINY), "--sysfs", str(tmp_path))
    return json.loads(strata_core(*plan, env=env).stdout)["host_threads"]


@pytest.mark.skipif(threads.cores() < 2, reason="measuring needs two cores or more")
def test_a_run_measures_the_threads_once_and_keeps_them_a_day(env, tmp_path):
    assert plan_threads(env, tmp_path)["source"] == "not measured"
    first = host_run(env, tmp_path)["threads_choice"]
    assert first["source"] == "measured" and first["reason"].endswith("measured now")
    again = host_run(env, tmp_path)["threads_choice"]
    assert again["source"] == "measured" and again["reason"].endswith("kept a day")
    assert (again["threads"], again["wait_policy"]) == (first["threads"], first["wait_policy"])
    # the plan says what the run will take
    assert plan_threads(env, tmp_path) == again
    kept = list((Path(env["STRATA_CACHE_DIR"])).glob("threads-*.marshal"))
    assert len(kept) == 1


@pytest.mark.skipif(threads.cores() < 2, reason="measuring needs two cores or more")
def test_a_measurement_older_than_a_day_is_made_again(env, tmp_path):
    host_run(env, tmp_path)
    (kept,) = Path(env["STRATA_CACHE_DIR"]).glob("threads-*.marshal")
    entry = marshal.loads(kept.read_bytes())
    entry["when"] -= threads.KEPT_S + 1
    kept.write_bytes(marshal.dumps(entry))
    assert host_run(env, tmp_path)["threads_choice"]["reason"].endswith("measured now")


def test_with_the_cache_off_nothing_is_kept(env, tmp_path):
    env = env | {"STRATA_CACHE": "0"}
    host_run(env, tmp_path)
    assert not list(Path(env["STRATA_CACHE_DIR"]).glob("threads-*"))


def test_threads_the_user_gives_are_taken_as_given(env, tmp_path):
    answer = host_run(env, tmp_path, "--threads", "1")
    assert answer["threads"] == 1
    assert answer["threads_choice"] == {
        "threads": 1, "wait_policy": None, "source": "user", "reason": "--threads 1"
    }  # fmt: skip
    env = env | {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "passive"}
    assert plan_threads(env, tmp_path) == {
        "threads": 1, "wait_policy": "passive", "source": "user", "reason": "OMP_NUM_THREADS=1"
    }  # fmt: skip


def test_one_core_runs_one_thread_without_measuring(env, tmp_path):
    probe = (
        "import os, sys; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))});"
        "from strata_core.launcher import main; sys.exit(main(sys.argv[1:]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, "plan", "--json", "--sysfs", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert json.loads(result.stdout)["host_threads"] == {
        "threads": 1,
        "wait_policy": None,
        "source": "one core",
        "reason": "this process may run on one core",
    }


def host_table(folder: Path, header: str) -> Path:
    from strata_core.host.platform import blas_version, isa_level
    from strata_core.tuning.tables import HOST

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / HOST.file_name(isa_level(), blas_version())
    path.write_text(
        "# strata-tuning columns=T,N,K,dtype,op,solution,default_us,best_us min_gain=1.05 "
        f"{header}\nSTRATA_HOST_TUNING_V1 {isa_level()} {blas_version()}\n"
        "256 4096 2048 f32 qkv default 100.00 99.00\n"
    )
    return path


def test_a_host_table_records_the_threads_the_plan_takes(env, tmp_path):
    table = host_table(tmp_path / "tables", "threads=1 omp_wait_policy=active")
    env = env | {"STRATA_TUNING_DIR": str(table.parent)}
    assert plan_threads(env, tmp_path) == {
        "threads": 1,
        "wait_policy": "active",
        "source": "table",
        "reason": f"from the host tuning table {table}",
    }
    answer = host_run(env, tmp_path)
    assert answer["threads"] == 1 and answer["threads_choice"]["source"] == "table"
    assert not list(Path(env["STRATA_CACHE_DIR"]).glob("threads-*"))  # nothing measured


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        ("threads=0", "threads must be a whole number from 1, got '0'"),
        ("threads=two", "threads must be a whole number from 1, got 'two'"),
        ("threads=2 omp_wait_policy=spin", "omp_wait_policy must be active or passive, got 'spin'"),
        ("omp_wait_policy=active", "omp_wait_policy without threads"),
    ],
)
def test_a_host_tables_threads_are_checked(env, tmp_path, header, problem):
    table = host_table(tmp_path, header)
    result = run("table", "check", str(table), env=env)
    assert result.returncode == 1
    assert f"{table}:1: {problem}" in result.stdout + result.stderr


def test_tune_measures_the_threads_into_the_host_table(env, tmp_path):
    result = strata_core(
        "tune", "--host", "--case", "256,qkv,256,256,f32", "--repeats", "3",
        "--output", f"{tmp_path}/", env=env,
    )  # fmt: skip
    (table,) = tmp_path.glob("*-host-*.txt")
    header = dict(t.split("=", 1) for t in table.read_text().splitlines()[0].split()[2:])
    assert int(header["threads"]) in (1, threads.cores())
    assert header.get("omp_wait_policy", "active") == "active"
    assert "strata-core: tune: host threads: " in result.stderr
    chosen = plan_threads(env | {"STRATA_TUNING_DIR": str(tmp_path)}, tmp_path)
    assert chosen["source"] == "table" and chosen["threads"] == int(header["threads"])


WAIT = """
from strata_core.host.library import HostLibrary
import os
HostLibrary(wait_policy={first!r})
HostLibrary(wait_policy={second!r})
print(os.environ.get("OMP_WAIT_POLICY"))
"""


@pytest.mark.parametrize(
    ("first", "second", "set_to"),
    [("active", "passive", "active"), (None, "active", None), ("passive", None, "passive")],
)
def test_the_wait_policy_is_set_where_openmp_starts(env, first, second, set_to):
    """OpenMP reads OMP_WAIT_POLICY once, when the library first loads: the first load sets
    it, and a later one keeps what OpenMP started with."""
    result = subprocess.run(
        [sys.executable, "-c", WAIT.format(first=first, second=second)],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.stdout.strip() == str(set_to)


def test_a_process_whose_openmp_ran_measures_without_hanging(monkeypatch):
    """The trial runs in a new Python, so that nothing a busy process holds (its threads'
    locks, its OpenMP runtime) reaches it: this one, which ran the host kernels on every
    core and holds pytest's threads, measures too. (In a fork, the test suite's tune
    --switches tests once waited out the trial's 60 s limit.)"""
    import numpy as np

    from strata_core.answer_cache import Recorder
    from strata_core.api.records import Workload
    from strata_core.host.library import HostLibrary

    lib = HostLibrary()
    lib.set_threads(0)
    lib.matvec_q8_0(*(np.ones(s, t) for s, t in [((2048, 2048), np.int8),
                    ((2048, 64), np.float16), (2048, np.int8), (64, np.float32)]))  # fmt: skip
    monkeypatch.setattr(threads, "TRIAL_TIMEOUT_S", 30.0)
    shape = Workload(hidden=256, ffn=64, experts_per_token=2)
    measured = threads.measure(shape, {**os.environ, "STRATA_CACHE": "0"}, Recorder())
    assert set(measured) == {"default", "active"}
    assert all(set(times) == {"1", str(threads.cores())} for times in measured.values())


def test_a_measurement_kept_where_another_user_can_write_is_not_used(env, tmp_path, monkeypatch):
    from strata_core.answer_cache import Recorder
    from strata_core.plan import profile

    measured = {"default": {"1": 1.0, "2": 0.5}, "active": {"1": 1.0, "2": 0.6}}
    monkeypatch.setattr(threads, "measure", lambda *_: measured)
    monkeypatch.setattr(threads, "cores", lambda: 2)
    workload = profile.load(TINY)
    threads.host_threads(0, env, None, workload, Recorder(), measure_now=True)
    assert plan_threads(env, tmp_path)["reason"].endswith("kept a day")
    folder = Path(env["STRATA_CACHE_DIR"])
    folder.chmod(0o777)
    result = run("plan", "--json", "--profile", str(TINY), "--sysfs", str(tmp_path), env=env)
    assert json.loads(result.stdout)["host_threads"]["source"] == "not measured"
    said = f"the answer cache's folder {folder} is writable by everyone (mode 0777)"
    assert said in result.stderr
