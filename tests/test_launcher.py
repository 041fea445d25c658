"""The launcher contract (docs/json.md): `plan --json` says exactly what `run -- ENGINE`
applies, and `run -- ENGINE` becomes the engine."""

import json
import signal
import subprocess
import sys
import time

import pytest
from cli_runner import strata_core

from strata_core import launcher
from strata_core.cli.engine_start import start_engine
from strata_core.testing.sysfs import R9700, RADEON_780M, RX_7900_XTX, write_nvidia_gpu, write_sysfs

#: prints its arguments and the environment it got (its pid into PID_FILE), then sleeps,
#: kills itself or exits as told
ENGINE = """
import json, os, sys, time
if os.environ.get("PID_FILE"):
    open(os.environ["PID_FILE"], "w").write(str(os.getpid()))
print(json.dumps({"argv": sys.argv[1:], "env": dict(os.environ)}), flush=True)
if os.environ.get("FAKE_ENGINE_SLEEP"):
    time.sleep(float(os.environ["FAKE_ENGINE_SLEEP"]))
if os.environ.get("FAKE_ENGINE_SIGNAL"):
    os.kill(os.getpid(), int(os.environ["FAKE_ENGINE_SIGNAL"]))
sys.exit(int(os.environ.get("FAKE_ENGINE_STATUS", "0")))
"""


@pytest.fixture
def engine(tmp_path):
    script = tmp_path / "fake-engine"
    script.write_text(f"#!{sys.executable}\n{ENGINE}")
    script.chmod(0o755)
    return script


@pytest.fixture
def pc(tmp_path, env):
    root = write_sysfs(tmp_path / "sys", [R9700])
    config = tmp_path / "strata.toml"
    config.write_text('args = ["--kv", "int8"]\n[env]\nSTRATA_DENSE_MMQ = "1"\nHSA_FOO = "x"\n')
    return env | {"STRATA_SYSFS": str(root), "STRATA_CONFIG": str(config)}


def test_run_applies_exactly_what_plan_json_says(pc, engine):
    chosen = ("--pack", "IQ3_S", "--os", "linux")
    user = pc | {"STRATA_HC_Q8": "0"}
    answer = json.loads(strata_core("plan", "--json", *chosen, env=user).stdout)
    assert answer["schema_version"] == 1
    assert answer["engine_env"]["STRATA_HIP_WMMA"] == "1"  # an arch default
    assert answer["engine_env"]["STRATA_DENSE_MMQ"] == "1"  # the run config's switch
    assert answer["engine_env"]["HSA_FOO"] == "x"  # the run config's other variable
    assert "STRATA_HC_Q8" not in answer["engine_env"]  # the user's own
    seen = json.loads(strata_core("run", *chosen, "--", str(engine), "--serve", env=user).stdout)
    assert seen["argv"] == ["--serve", *answer["engine_argv"]]
    added = {k: v for k, v in seen["env"].items() if user.get(k) != v}
    assert added == answer["engine_env"]


def test_json_errors_are_json(env):
    result = strata_core("plan", "--json", "--device", "gfx9000", env=env, check=False)
    assert result.returncode == 2
    answer = json.loads(result.stdout)
    assert answer["schema_version"] == 1 and answer["exit"] == 2
    assert answer["error"].startswith("--device gfx9000: not a target strata knows")


def test_the_engine_replaces_strata_core(pc, engine, tmp_path):
    """exec: the engine has strata-core's pid, so a signal sent to strata-core reaches it and
    nothing is orphaned; a death by a signal is strata-core's."""
    pid_file = tmp_path / "pid"
    child = subprocess.Popen(
        [sys.executable, "-m", "strata_core", "run", "--", str(engine)],
        env=pc | {"PID_FILE": str(pid_file), "FAKE_ENGINE_SLEEP": "60"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and child.poll() is None
        time.sleep(0.05)
    assert int(pid_file.read_text()) == child.pid
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=30) == -signal.SIGTERM


def test_an_engine_that_kills_itself_is_seen_as_such(pc, engine):
    result = strata_core(
        "run", "--", str(engine), env=pc | {"FAKE_ENGINE_SIGNAL": "9"}, check=False
    )
    assert result.returncode == -signal.SIGKILL


@pytest.mark.parametrize(
    ("make", "status", "why"), [("missing", 127, "not found"), ("plain", 126, "Permission denied")]
)
def test_an_engine_that_cannot_start(env, tmp_path, make, status, why):
    engine = tmp_path / "engine"
    if make == "plain":
        engine.write_text("not a program")
    result = strata_core("run", "--sysfs", str(tmp_path), "--", str(engine), env=env, check=False)
    assert result.returncode == status
    assert result.stderr.splitlines()[-1] == (
        f"strata-core: error: cannot start the engine {engine}: {why}"
    )


def ignore_sighup_and_block_sigusr1() -> None:
    """Start a process as `nohup` would (SIGHUP ignored), with SIGUSR1 blocked."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})


def signal_masks(status: str) -> dict[str, int]:
    """The ignored and the blocked signals of a /proc/PID/status, as bit masks."""
    fields = dict(line.split(":\t") for line in status.splitlines())
    return {name: int(fields[name], 16) for name in ("SigIgn", "SigBlk")}


def test_the_engine_finds_the_signals_a_shell_would_give_it(env, tmp_path):
    """Python ignores SIGPIPE and SIGXFSZ as it starts, and strata ignores SIGXFSZ: the
    engine finds them at their default, a signal ignored by whoever started strata-core still
    ignored (SIGHUP under nohup), and no signal blocked."""
    engine = tmp_path / "engine"
    engine.write_text("#!/bin/sh\nexec cat /proc/self/status\n")
    engine.chmod(0o755)
    started = dict(
        capture_output=True, text=True, timeout=120, preexec_fn=ignore_sighup_and_block_sigusr1
    )
    direct = subprocess.run([str(engine)], env=env, **started)
    through = subprocess.run(
        [sys.executable, "-m", "strata_core", "run", "--sysfs", str(tmp_path), "--", str(engine)],
        env=env,
        **started,
    )
    assert through.returncode == 0, through.stderr
    shell, engine_got = signal_masks(direct.stdout), signal_masks(through.stdout)
    assert shell["SigIgn"] & 1 << (signal.SIGHUP - 1)
    assert shell["SigBlk"] & 1 << (signal.SIGUSR1 - 1)
    assert engine_got == {"SigIgn": shell["SigIgn"], "SigBlk": 0}


def test_an_engine_writing_to_a_closed_pipe_ends_as_from_a_shell(env, tmp_path):
    """`run -- yes | head -1` as bash's `yes | head -1`: yes dies of SIGPIPE (bash says 141),
    and says nothing of a broken pipe."""
    said = 'echo "exit statuses ${PIPESTATUS[*]}"'
    strata = f"{sys.executable} -m strata_core run --sysfs {tmp_path} -- yes"
    direct, through = (
        subprocess.run(
            ["bash", "-c", f"{yes} | head -1; {said}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        for yes in ("yes", strata)
    )
    assert direct.stdout == "y\nexit statuses 141 0\n"
    assert through.stdout == direct.stdout
    assert "Broken pipe" not in through.stderr


def test_an_engine_that_cannot_start_leaves_strata_cores_signals_as_they_were(tmp_path):
    """The dispositions and the mask put aside for the exec are put back when it fails, so
    strata-core says why as it would have (a closed stderr is no SIGPIPE)."""

    class Planned:
        engine_args = staticmethod(list)
        engine_env = staticmethod(dict)

    ignored = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    try:
        assert start_engine(Planned(), {}, [str(tmp_path / "missing")]) == 127
        assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN
        assert signal.SIGUSR1 in signal.pthread_sigmask(signal.SIG_BLOCK, ())
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        signal.signal(signal.SIGPIPE, ignored)


def test_no_host_backend_line_before_an_engine(env, tmp_path, engine):
    result = strata_core("run", "--sysfs", str(tmp_path), "--", str(engine), env=env)
    assert "host backend" not in result.stderr


def test_a_closed_pipe_ends_quietly(pc):
    command = f"{sys.executable} -m strata_core plan | head -1"
    done = subprocess.run(command, shell=True, env=pc, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("plan for HIP 0: ")


def test_ctrl_c_while_planning_ends_with_130(monkeypatch, capsys):
    def interrupted(argv, recorder=None):
        raise KeyboardInterrupt

    monkeypatch.setattr("strata_core.cli.main.main", interrupted)
    assert launcher.main(["run"]) == 130
    assert capsys.readouterr().err == ""


def test_run_starts_the_engine_with_the_plan(pc, engine):
    chosen = ("run", "--pack", "IQ3_S", "--os", "linux", "--", str(engine), "--serve")
    result = strata_core(*chosen, env=pc | {"STRATA_HC_Q8": "0"})
    seen = json.loads(result.stdout)
    # the run config's --kv int8, which the plan is for (STRATA_HIP_WMMA=1), reaches the engine
    assert seen["argv"] == [
        "--serve", "--pcie-frac", "0.15", "--kv", "int8", "--backend", "hip", "--gpu", "0"
    ]  # fmt: skip
    assert seen["env"]["STRATA_HIP_WMMA"] == "1"
    assert seen["env"]["STRATA_HC_Q8"] == "0"  # the user's value, untouched
    assert "hipBLASLt tuning table: none (" in result.stderr


def test_an_explicit_engine_argument_wins(pc, engine):
    result = strata_core("run", "--pack", "IQ3_S", "--", str(engine), "--pcie-frac", "0.3", env=pc)
    argv = json.loads(result.stdout)["argv"]
    assert argv == ["--pcie-frac", "0.3", "--kv", "int8", "--backend", "hip", "--gpu", "0"]


def test_the_engines_exit_status_passes_through(env, tmp_path, engine):
    result = strata_core(
        "run",
        "--sysfs",
        str(tmp_path),
        "--",
        str(engine),
        env=env | {"FAKE_ENGINE_STATUS": "3"},
        check=False,
    )
    assert result.returncode == 3


def engine_argv(env, *options, engine):
    """What the engine got after `run OPTIONS -- ENGINE`, checked against `plan --json`."""
    planned = json.loads(strata_core("plan", "--json", *options, env=env).stdout)["engine_argv"]
    seen = json.loads(strata_core("run", *options, "--", str(engine), env=env).stdout)["argv"]
    assert seen == planned
    return seen


@pytest.fixture
def two_cards(tmp_path, env):
    """The 780M (HIP 0) beside an R9700 (HIP 1)."""
    return env | {"STRATA_SYSFS": str(write_sysfs(tmp_path / "sys", [RADEON_780M, R9700]))}


def test_the_chosen_card_is_named_to_the_engine(two_cards, engine):
    assert engine_argv(two_cards, "--gpu", "0", engine=engine)[-4:] == [
        "--backend", "hip", "--gpu", "0"
    ]  # fmt: skip
    assert engine_argv(two_cards, engine=engine)[-2:] == ["--gpu", "1"]  # the automatic choice


def test_a_split_and_roles_reach_the_engine(tmp_path, env, engine):
    pc = env | {"STRATA_SYSFS": str(write_sysfs(tmp_path / "sys", [R9700, RX_7900_XTX]))}
    assert engine_argv(pc, "--gpus", "1,0", engine=engine)[-2:] == ["--gpu", "1,0"]
    roles = engine_argv(pc, "--gpu-roles", "1=main,0=helper", engine=engine)
    assert roles[-4:] == ["--gpu", "0,1", "--gpu-roles", "1=main,0=helper"]


def test_the_run_configs_gpu_reaches_the_engine(two_cards, engine, tmp_path):
    """`plan --toml` writes the chosen card; `run --` with that config tells the engine."""
    config = tmp_path / "chosen.toml"
    strata_core("plan", "--toml", "--gpu", "0", "--output", str(config), env=two_cards)
    assert "gpu = 0" in config.read_text()
    pc = two_cards | {"STRATA_CONFIG": str(config)}
    assert engine_argv(pc, engine=engine)[-2:] == ["--gpu", "0"]
    config.write_text("gpu = [0, 1]\n")
    assert engine_argv(pc, engine=engine)[-2:] == ["--gpu", "0,1"]


def test_an_nvidia_card_is_named_by_its_cuda_ordinal(tmp_path, env, engine, stand_in, with_driver):
    root = write_nvidia_gpu(write_sysfs(tmp_path / "sys", [R9700]), "0000:41:00.0")
    pc = with_driver(env, stand_in, STRATA_SYSFS=str(root))
    assert engine_argv(pc, engine=engine)[-4:] == ["--backend", "cuda", "--gpu", "0"]


def test_the_users_own_card_arguments_win(two_cards, engine):
    seen = strata_core("run", "--", str(engine), "--gpu=0", env=two_cards).stdout
    assert json.loads(seen)["argv"] == ["--gpu=0", "--backend", "hip"]


def test_run_starts_the_run_configs_exe(tmp_path, env, engine):
    folder = tmp_path / "checkout"
    folder.mkdir()
    engine.rename(folder / "strata")
    config = folder / "strata.toml"
    config.write_text('exe = "./strata"\nargs = ["--serve", "--pcie-frac", "0.5"]\n')
    result = strata_core(
        "run", "--sysfs", str(tmp_path), "--", env=env | {"STRATA_CONFIG": str(config)}
    )
    assert json.loads(result.stdout)["argv"] == ["--serve", "--pcie-frac", "0.5"]


def test_a_relative_exe_is_the_config_files_neighbour_never_one_on_path(tmp_path, env, engine):
    """`exe = "./strata"` in ./strata.toml starts the file beside it, as does a path with a
    slash in a config named from elsewhere; neither is looked for on PATH (where a decoy
    waits)."""
    folder = tmp_path / "checkout"
    (folder / "build").mkdir(parents=True)
    engine.rename(folder / "strata")
    (folder / "build" / "strata").symlink_to(folder / "strata")
    decoys = tmp_path / "bin"
    decoys.mkdir()
    decoy = decoys / "strata"
    decoy.write_text("#!/bin/sh\necho decoy\n")
    decoy.chmod(0o755)
    pc = env | {"PATH": f"{decoys}:{env['PATH']}"}
    (folder / "strata.toml").write_text('exe = "./strata"\nargs = ["--serve"]\n')
    here = strata_core("run", "--sysfs", str(tmp_path), "--", env=pc, cwd=folder)
    assert json.loads(here.stdout)["argv"] == ["--serve"]
    (folder / "strata.toml").write_text('exe = "build/strata"\n')
    elsewhere = strata_core(
        "run", "--sysfs", str(tmp_path), "--config", "checkout/strata.toml", "--",
        env=pc, cwd=tmp_path,
    )  # fmt: skip
    assert json.loads(elsewhere.stdout)["argv"] == []
    (folder / "strata").unlink()
    (folder / "strata.toml").write_text('exe = "./strata"\n')
    gone = strata_core("run", "--sysfs", str(tmp_path), "--", env=pc, cwd=folder, check=False)
    assert (gone.returncode, gone.stdout) == (127, "")
    assert gone.stderr.splitlines()[-1] == (
        f"strata-core: error: cannot start the engine {folder / 'strata'}: not found"
    )


def test_run_with_no_engine_anywhere_says_where_to_name_one(tmp_path, env):
    result = strata_core("run", "--sysfs", str(tmp_path), "--", env=env, check=False)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "strata-core: error: run --: name the engine to start after --, or as exe in the run "
        "config"
    )
