"""The run config: strata.toml and the engine's server JSON, their errors, atomic writes."""

import subprocess
import sys

import pytest
from cli_runner import strata_core

from strata_core.errors import StrataError
from strata_core.plan import config
from strata_core.plan.config import RunConfig, TuningSettings

GOOD = """\
gpu = [1, 0]
exe = "build-hip/strata"
args = ["--kv", "int8", "--kv-resident", "32768"]
arch_plugin = "hip_rdna4"

[gpu_roles]
"1" = "helper"
"0" = "main"

[env]
STRATA_HIP_WMMA = "auto"
STRATA_SCORES_THREAD = 0

[tuning]
hipblaslt_table = true
dirs = ["/opt/tuning"]
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_strata_toml(tmp_path):
    loaded = config.load(write(tmp_path, "strata.toml", GOOD))
    assert loaded == RunConfig(
        gpu=(1, 0),
        gpu_roles={"1": "helper", "0": "main"},
        env={"STRATA_HIP_WMMA": "auto", "STRATA_SCORES_THREAD": "0"},
        exe="build-hip/strata",
        args=("--kv", "int8", "--kv-resident", "32768"),
        arch_plugin="hip_rdna4",
        tuning=TuningSettings(hipblaslt_table=True, dirs=("/opt/tuning",)),
    )


def test_round_trip_through_tomli_w(tmp_path):
    loaded = config.load(write(tmp_path, "strata.toml", GOOD))
    assert config.load(write(tmp_path, "again.toml", config.dumps(loaded))) == loaded


def test_server_json_reads_its_keys_and_leaves_the_engines_alone(tmp_path):
    path = write(
        tmp_path,
        "strata-hip.json",
        """{
  "exe": "build-hip/strata",
  "args": ["--serve", "--kv", "int8"],
  "env": {"HSA_USERPTR_FOR_PAGED_MEM": "0"},
  "gpu": 1,
  "backend": "hip",
  "hipblaslt_table": true,
  "port": 8080,
  "split_skip_if_fits": true
}""",
    )
    assert config.load(path) == RunConfig(
        gpu=1,
        env={"HSA_USERPTR_FOR_PAGED_MEM": "0"},
        exe="build-hip/strata",
        args=("--serve", "--kv", "int8"),
        backend="hip",
        tuning=TuningSettings(hipblaslt_table=True),
    )


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.toml", "gpu = [1,\n", "bad.toml: not valid TOML: "),
        ("bad.toml", 'exe = "x"\ngpu = 1\ngpu = 2\n', "bad.toml:3: not valid TOML: "),
        (
            "bad.toml",
            'exe = "x"\ngpux = 1\n',
            "bad.toml:2: gpux: unknown key gpux (known: gpu, hip_ordinal, gpu_roles, env, exe, "
            "args, backend, arch_plugin, tuning)",
        ),
        (
            "bad.toml",
            'gpu = "first"\n',
            "bad.toml:1: gpu: expected a HIP number, a list of them or \"all\", got 'first'",
        ),
        ("bad.toml", "gpu = [0, 0]\n", "bad.toml:1: gpu: each HIP number once"),
        (
            "bad.toml",
            '[env]\nSTRATA_HIP_WMMA = "1"\nSTRATA_SH_STREAM = true\n',
            "bad.toml:3: env.STRATA_SH_STREAM: expected a string, got True",
        ),
        (
            "bad.toml",
            'exe = "x"\n\n[tuning]\nhipblaslt_table = "yes"\n',
            "bad.toml:4: tuning.hipblaslt_table: expected true or false, got 'yes'",
        ),
        (
            "bad.toml",
            'args = "--kv int8"\n',
            "bad.toml:1: args: expected a list of strings, got '--kv int8'",
        ),
        ("bad.json", '{\n  "exe": "x",\n  "gpu": 1,,\n}\n', "bad.json:3: not valid JSON: "),
        ("bad.json", "[1, 2]\n", "bad.json:1: expected a JSON object"),
        (
            "bad.json",
            '{\n  "exe": "x",\n  "hipblaslt_table": "yes"\n}\n',
            "bad.json:3: hipblaslt_table: expected true or false, got 'yes'",
        ),
        (
            "bad.json",
            '{\n  "env": {\n    "STRATA_X": [1]\n  }\n}\n',
            "bad.json:3: env.STRATA_X: expected a string, got [1]",
        ),
        (
            "bad.toml",
            'exe = "x"\n\n[env]\n"A.B" = "1"\n\n"C=D" = "1"\n',
            "bad.toml:6: env.\"C=D\": a variable's name cannot hold '='",
        ),
        (
            "bad.toml",
            "[env.'quoted']\nX = 1\n",
            "bad.toml:1: env.quoted: expected a string, got {'X': 1}",
        ),
        (
            "bad.json",
            '{\n  "env": {\n    "A": "1",\n    "\\u0000": "1"\n  }\n}\n',
            'bad.json:4: env."\\u0000": the name holds a NUL character',
        ),
        (
            "bad.toml",
            f"gpu = [{', '.join(['1'] * 100)}, -1]\n",
            'bad.toml:1: gpu: expected a HIP number, a list of them or "all", got '
            "[1, 1, 1, 1, 1, 1, ...]",
        ),
    ],
)
def test_malformed_configs_name_the_file_the_line_and_the_key(tmp_path, name, text, message):
    path = write(tmp_path, name, text)
    with pytest.raises(StrataError) as error:
        config.load(path)
    assert str(error.value).startswith(f"{tmp_path}/{message}")
    assert "\n" not in str(error.value)


def test_unreadable_config(tmp_path):
    with pytest.raises(StrataError, match=r"missing.toml: cannot read the run config"):
        config.load(tmp_path / "missing.toml")


@pytest.mark.parametrize(("length", "status"), [(131_065, 0), (131_066, 2)])
def test_a_variable_is_at_most_what_linux_passes_in_one(env, tmp_path, length, status):
    """HSA_X=VALUE and its NUL: 131,072 bytes start the engine; a byte more is refused before."""
    config = write(tmp_path, "strata.toml", f'[env]\nHSA_X = "{"x" * length}"\n')
    result = strata_core(
        "run", "--sysfs", str(tmp_path), "--config", str(config), "--", "true", env=env, check=False
    )
    assert result.returncode == status, result.stderr
    if status:
        assert result.stderr.splitlines()[-1] == (
            f"strata-core: error: {config}:2: env.HSA_X: 131,073 bytes; Linux passes at most "
            "131,072 in a variable, with its name"
        )


def test_a_run_config_from_a_pipe_is_read_only_to_1_mib(env):
    plan = ("plan", "--device", "gfx1201", "--config", "/dev/stdin")
    result = subprocess.run(
        [sys.executable, "-m", "strata_core", *plan],
        env=env,
        input="#" + "x" * (1 << 20) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "strata-core: error: /dev/stdin: more than 1 MiB; a run config is at most 1 MiB"
    ]
