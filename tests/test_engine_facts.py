"""The launcher listens (issue 54): the run config's backend and cards and the engine's own
arguments after `run --` are facts of the run, which the plan follows (AMD_HIP.md's sentence
beside each test); where they disagree with strata-core's options, one line says which wins,
or the run is refused."""

import json
import sys
from functools import partial

import pytest
from cli_runner import strata_core

from strata_core.plan import engine_facts
from strata_core.testing.sysfs import R9700, RX_7900_XTX, RX_9070_XT, write_nvidia_gpu, write_sysfs

plan = partial(strata_core, "plan", "--json", "--os", "linux")
ENGINE = "build-hip/strata"


@pytest.fixture
def three(tmp_path):
    """HIP 0 an RX 7900 XTX, HIP 1 an R9700, HIP 2 an RX 9070 XT."""
    return str(write_sysfs(tmp_path / "sys", [RX_7900_XTX, R9700, RX_9070_XT]))


@pytest.fixture
def fake_engine(tmp_path):
    """An engine that prints the arguments and environment it was started with."""
    script = tmp_path / "engine"
    script.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        'print(json.dumps({"argv": sys.argv[1:], "env": dict(os.environ)}))\n'
    )
    script.chmod(0o755)
    return str(script)


def test_the_page_s_arguments_are_told_from_their_values():
    """--trim-stage-weights takes no value and --layer-split one: the KV cache after them is
    read as the engine reads it, and every argument stays the engine's."""
    args = ["--serve", "--trim-stage-weights", "--kv", "int8", "--layer-split", "27", "--x=1"]
    assert engine_facts.arguments(args) == {
        "--serve": "",
        "--trim-stage-weights": "",
        "--kv": "int8",
        "--layer-split": "27",
        "--x": "1",
    }
    facts = engine_facts.read(["--kv=fp16", "--gpu", "1,0"], ["--kv", "int8"], "strata.toml")
    assert {f: (x.value, x.source, x.where) for f, x in facts.items()} == {
        "--kv": ("fp16", "engine argument", "--kv fp16 after run --"),
        "--gpu": ("1,0", "engine argument", "--gpu 1,0 after run --"),
    }


def test_the_engine_s_kv_is_the_plan_s(env):
    """ "STRATA_HIP_WMMA ... on with int8 KV" on gfx12 Linux: an engine started with --kv int8
    gets it, and the plan says where the KV cache came from."""
    args = ("--device", "gfx1201", "--pack", "IQ3_S", "--", ENGINE, "--kv", "int8")
    answer = json.loads(plan(*args, env=env).stdout)
    assert answer["switches"]["STRATA_HIP_WMMA"]["value"] == "1"
    assert answer["facts"]["kv"] == {
        "value": "int8",
        "source": "engine argument",
        "reason": "--kv int8 after run --",
    }
    mirror = json.loads(plan("--device", "gfx1201", "--", ENGINE, "--kv", "f16", env=env).stdout)
    assert mirror["switches"]["STRATA_HIP_WMMA"]["value"] is None


def test_strata_s_kv_and_the_engine_s_disagree_in_one_line_and_the_engine_wins(env):
    args = ("--device", "gfx1201", "--kv", "f16", "--", ENGINE, "--kv", "int8")
    answer = json.loads(plan(*args, env=env).stdout)
    assert (
        "--kv f16 on strata-core's command line and --kv int8 after run -- differ: the engine "
        "runs with its own, so the plan is for int8"
    ) in answer["warnings"]
    assert answer["switches"]["STRATA_HIP_WMMA"]["value"] == "1"


def test_strata_s_kv_reaches_the_engine(env, tmp_path, fake_engine):
    """No run where the engine's KV differs from the plan's: strata-core's --kv is passed on
    where the engine's arguments name none."""
    root = write_sysfs(tmp_path / "one", [R9700])
    chosen = ("--sysfs", str(root), "--os", "linux", "--kv", "int8")
    seen = json.loads(strata_core("run", *chosen, "--", fake_engine, "--serve", env=env).stdout)
    assert seen["argv"][:3] == ["--serve", "--kv", "int8"] and seen["env"]["STRATA_HIP_WMMA"] == "1"
    own = json.loads(strata_core("run", *chosen, "--", fake_engine, "--kv=int8", env=env).stdout)
    assert own["argv"].count("--kv") == 0 and own["argv"][0] == "--kv=int8"


def test_the_engine_s_card_is_the_plan_s(env, three, fake_engine):
    """ "--gpu N and the config's "gpu" are HIP numbers": an engine started on HIP 0 runs the
    RX 7900 XTX, so the plan is for it, not for the R9700 the automatic choice takes ("the CUDA
    and gfx11 parts keep their own measured values")."""
    answer = json.loads(plan("--sysfs", three, "--", ENGINE, "--gpu", "0", env=env).stdout)
    assert (answer["device"]["gfx"], answer["selected"]) == ("gfx1100", [0])
    assert answer["facts"]["cards"]["source"] == "engine argument"
    assert (
        "STRATA_HC_Q8" not in answer["engine_env"] and "STRATA_PF_FUSED" not in answer["engine_env"]
    )
    assert not any(a == "--pcie-frac" for a in answer["engine_argv"])
    seen = json.loads(
        strata_core("run", "--sysfs", three, "--", fake_engine, "--gpu", "0", env=env).stdout
    )
    assert seen["argv"] == ["--gpu", "0", "--backend", "hip"]
    assert "STRATA_HIP_QUEUE_PRIME" not in seen["env"]


def test_two_choices_of_cards_that_differ_are_refused(env, three, tmp_path):
    for strata_side in (("--gpu", "1"), ("--gpus", "1,0")):
        result = strata_core(
            "run", "--sysfs", three, *strata_side, "--", ENGINE, "--gpu", "0",
            env=env, check=False,
        )  # fmt: skip
        assert result.returncode == 2 and result.stderr.count("\n") == 1
        assert "name different cards" in result.stderr and "(HIP 0)" in result.stderr
    same = plan("--sysfs", three, "--gpu", "1", "--", ENGINE, "--gpu", "1", env=env)
    assert json.loads(same.stdout)["selected"] == [1]
    config = tmp_path / "strata.toml"
    config.write_text("gpu = 2\n")
    result = strata_core(
        "plan", "--sysfs", three, "--config", str(config), "--", ENGINE, "--gpu", "1",
        env=env, check=False,
    )  # fmt: skip
    assert result.stderr == (
        "strata-core: error: --gpu from the engine's arguments after run -- (HIP 1) and gpu from "
        f"{config} (HIP 2) name different cards: the engine would run on the one and strata "
        "plan for the other; give the cards once\n"
    )


def test_the_config_s_backend_is_the_backend(env, tmp_path, stand_in, with_driver):
    """ "Two cards in one run (layer split): "backend": "hip", "gpu": [1, 0] in the config":
    on a PC with an H200 and an R9700, a config naming hip plans the HIP backend, and its
    "gpu" counts in HIP numbers."""
    root = str(write_nvidia_gpu(write_sysfs(tmp_path / "sys", [R9700]), "0000:41:00.0"))
    driver = with_driver(env, stand_in)
    assert json.loads(plan("--sysfs", root, env=driver).stdout)["backend"] == "cuda"
    config = tmp_path / "strata.toml"
    config.write_text('backend = "hip"\ngpu = [0]\n')
    answer = json.loads(plan("--sysfs", root, "--config", str(config), env=driver).stdout)
    assert (answer["backend"], answer["device"]["gfx"], answer["selected"]) == (
        "hip",
        "gfx1201",
        [0],
    )
    assert answer["engine_argv"] == ["--backend", "hip", "--gpu", "0"]
    assert answer["facts"]["backend"] == {
        "value": "hip",
        "source": "config",
        "reason": f"backend from {config}",
    }
    config.write_text('backend = "hip"\ngpu = [1]\n')
    wrong = strata_core("plan", "--sysfs", root, "--config", str(config), env=driver, check=False)
    assert wrong.returncode == 2 and "no HIP device 1 (visible HIP devices: 0)" in wrong.stderr
    engine_side = plan("--sysfs", root, "--", ENGINE, "--backend", "hip", env=driver)
    assert json.loads(engine_side.stdout)["backend"] == "hip"
    # the engine's --gpu counts in the backend's numbers: a CUDA ordinal on the H200
    cuda = json.loads(plan("--sysfs", root, "--", ENGINE, "--gpu", "0", env=driver).stdout)
    assert (cuda["backend"], cuda["device"]["gfx"], cuda["facts"]["cards"]["value"]) == (
        "cuda",
        "sm_90",
        "0",
    )


def test_a_backend_nothing_here_runs_is_refused_in_one_line(env, three, tmp_path):
    config = tmp_path / "strata.toml"
    config.write_text('backend = "cuda"\n')
    result = strata_core("plan", "--sysfs", three, "--config", str(config), env=env, check=False)
    assert result.returncode == 2 and result.stderr == (
        f"strata-core: error: backend cuda (backend from {config}): no visible card of this PC "
        "is one it runs with an installed plugin\n"
    )
    two = strata_core(
        "plan", "--sysfs", three, "--config", str(config), "--", ENGINE, "--backend", "hip",
        env=env, check=False,
    )  # fmt: skip
    assert two.returncode == 2 and "name two backends" in two.stderr
    unknown = strata_core("plan", "--sysfs", three, "--", ENGINE, "--backend", "vulkan",
                          env=env, check=False)  # fmt: skip
    assert unknown.stderr == (
        "strata-core: error: backend vulkan (--backend vulkan after run --): strata runs the "
        "hip or the cuda backend\n"
    )


def test_a_hand_set_shared_expert_fork_with_kv_streaming_on_windows_is_warned_about(env, tmp_path):
    """ "a config that sets it by hand gets a warning line at the start; nothing is refused":
    KV streaming is the engine's --kv-resident after run -- as much as strata's option."""
    config = tmp_path / "sh.toml"
    config.write_text('[env]\nSTRATA_SH_STREAM = "1"\n')
    args = ("--device", "gfx1030", "--os", "windows", "--config", str(config))
    answer = json.loads(
        strata_core("plan", "--json", *args, "--", ENGINE, "--kv-resident", "32768", env=env).stdout
    )
    assert any(w.startswith("STRATA_SH_STREAM=1 with KV streaming on Windows") for w in
               answer["warnings"])  # fmt: skip
    assert answer["facts"]["kv_streaming"]["reason"] == "--kv-resident 32768 after run --"
    assert answer["switches"]["STRATA_SH_STREAM"]["value"] == "1"  # kept as set


def test_the_run_config_plan_writes_carries_the_page_s_keys(env, three, tmp_path):
    """A server that reads the config `plan --toml` writes runs the cards and KV cache the plan
    is for: "backend", "gpu" and the KV cache in "args", as the page spells them."""
    import tomllib

    written = strata_core(
        "plan", "--toml", "--sysfs", three, "--", ENGINE, "--gpu", "2", "--kv", "int8", env=env
    ).stdout
    config = tomllib.loads(written)
    assert (config["backend"], config["gpu"]) == ("hip", 2)
    assert config["args"][-2:] == ["--kv", "int8"]
    assert config["env"]["STRATA_HIP_WMMA"] == "1"  # the RX 9070 XT's gfx12 default with int8


def test_the_run_config_s_kv_reaches_an_engine_named_after_run(env, tmp_path, fake_engine):
    """The run config's args are its exe's; an engine named after `run --` gets the KV cache
    they name all the same, once, and the exe started from the config gets it once too."""
    root = write_sysfs(tmp_path / "one", [R9700])
    config = tmp_path / "strata.toml"
    config.write_text(
        f'exe = "{fake_engine}"\nargs = ["--serve", "--kv", "int8", "--kv-resident", "32768"]\n'
    )
    chosen = ("--sysfs", str(root), "--os", "linux", "--config", str(config))
    named = json.loads(strata_core("run", *chosen, "--", fake_engine, env=env).stdout)["argv"]
    from_config = json.loads(strata_core("run", *chosen, "--", env=env).stdout)["argv"]
    for argv in (named, from_config):
        assert argv.count("--kv") == argv.count("--kv-resident") == 1, argv
        at = argv.index("--kv")
        assert argv[at + 1] == "int8" and argv[argv.index("--kv-resident") + 1] == "32768"
    assert from_config[0] == "--serve"
