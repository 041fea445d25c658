"""`strata-core plan` as a user runs it."""

import json
from functools import partial

import pytest
from cli_runner import strata_core

from strata_core.testing.sysfs import R9700, RADEON_780M, STRIX_HALO, write_sysfs

run = partial(strata_core, "plan")


@pytest.fixture
def pc(tmp_path, env):
    """An environment whose sysfs holds a 780M and an R9700."""
    root = write_sysfs(tmp_path / "sys", [RADEON_780M, R9700])
    return env | {"STRATA_SYSFS": str(root)}


def test_plan_json(pc):
    answer = json.loads(
        run("--json", "--kv", "int8", "--pack", "IQ3_S", "--os", "linux", env=pc).stdout
    )
    assert set(answer) >= {
        "device",
        "plugin",
        "os",
        "package",
        "switches",
        "args",
        "log",
        "warnings",
    }
    assert answer["device"]["index"] == 1 and answer["device"]["gfx"] == "gfx1201"
    assert (answer["plugin"], answer["os"], answer["package"]) == ("hip_rdna4", "linux", "rx9070")
    assert answer["switches"]["STRATA_HIP_WMMA"] == {
        "value": "1",
        "source": "arch-default",
        "reason": "gfx12 Linux: on with int8 KV (AMD_HIP.md, Speed switches)",
    }
    assert answer["switches"]["STRATA_DENSE_MMQ"]["value"] is None
    assert answer["args"]["pcie_frac"]["value"] == "0.15"
    assert answer["log"] == [
        "hipBLASLt tuning table: none (off by default on gfx1201: a table changes rounding, so "
        "packaged engines take it by default only on gfx1151; STRATA_HIPBLASLT_TABLE=on takes it)"
    ]


def test_plan_for_a_card_that_is_not_here(env):
    answer = json.loads(run("--json", "--device", "gfx1103", "--os", "linux", env=env).stdout)
    assert answer["device"]["integrated"] is True
    assert answer["package"] is None
    assert answer["log"][0].startswith("iGPU prompt set: STRATA_HIP_WMMA=1")
    assert {v["source"] for k, v in answer["switches"].items() if k == "STRATA_PA_FAST"} == {
        "igpu-set"
    }


def test_human_output_is_grouped_by_source(pc):
    out = run("--kv", "int8", "--os", "linux", env=pc | {"STRATA_SELECT_WMMA": "1"}).stdout
    titles = [line for line in out.splitlines() if line.endswith(":") and not line[0].isspace()]
    assert titles == ["set by you:", "architecture defaults:", "kernels:", "start lines:"]
    assert "  STRATA_SELECT_WMMA=1" in out
    unset = [line for line in out.splitlines() if line.endswith("(-v lists them)")]
    assert len(unset) == 1 and "unset;" not in out
    verbose = run("--kv", "int8", "--os", "linux", "-v", env=pc | {"STRATA_SELECT_WMMA": "1"})
    section = verbose.stdout.split("\nengine built-in (unset):\n")[1].split("\n\n")[0]
    assert len(section.splitlines()) == int(unset[0].split()[0])
    assert all("unset; engine built-in: " in line for line in section.splitlines())
    assert out.splitlines()[0] == (
        "plan for HIP 1: Radeon AI PRO R9700 (gfx1201, RDNA4, discrete) on Linux"
    )


def test_explain(pc):
    out = run("--explain", "STRATA_HC_Q8", env=pc).stdout
    assert out.splitlines()[0] == (
        "STRATA_HC_Q8 = 1 (arch-default): gfx12: on (AMD_HIP.md, Speed switches)"
    )
    assert "  reference: AMD_HIP.md, Speed switches" in out


def test_toml_reproduces_the_plan(pc, tmp_path):
    first = json.loads(
        run(
            "--json",
            "--kv",
            "int8",
            "--pack",
            "Q2_0",
            "--os",
            "linux",
            env=pc | {"STRATA_HIP_ROUTER_OLD": "1"},
        ).stdout
    )
    config = tmp_path / "strata.toml"
    run(
        "--toml",
        "--output",
        str(config),
        "--kv",
        "int8",
        "--pack",
        "Q2_0",
        "--os",
        "linux",
        env=pc | {"STRATA_HIP_ROUTER_OLD": "1"},
    )
    again = json.loads(
        run("--json", "--config", str(config), "--pack", "Q2_0", "--os", "linux", env=pc).stdout
    )
    assert {k: v["value"] for k, v in again["switches"].items()} == {
        k: v["value"] for k, v in first["switches"].items()
    }
    assert {v["source"] for v in again["switches"].values()} == {"config", "builtin"}
    assert again["args"]["pcie_frac"] == {
        "value": "0.15",
        "source": "config",
        "reason": f"set in {config}",
    }
    assert again["device"]["index"] == 1


def test_the_config_chooses_the_card_and_the_command_line_wins(pc, tmp_path):
    config = tmp_path / "strata.toml"
    config.write_text("gpu = 0\n")
    assert (
        json.loads(run("--json", env=pc | {"STRATA_CONFIG": str(config)}).stdout)["device"]["gfx"]
        == "gfx1103"
    )
    assert (
        json.loads(run("--json", "--gpu", "1", "--config", str(config), env=pc).stdout)["device"][
            "gfx"
        ]
        == "gfx1201"
    )


def test_strata_toml_in_the_current_directory_is_read(pc, tmp_path):
    (tmp_path / "strata.toml").write_text('[env]\nSTRATA_HC_Q8 = "0"\n')
    answer = json.loads(run("--json", env=pc, cwd=tmp_path).stdout)
    assert answer["switches"]["STRATA_HC_Q8"] == {
        "value": "0",
        "source": "config",
        "reason": "set in strata.toml",
    }


def test_server_json_config(pc, tmp_path):
    config = tmp_path / "strata-hip.json"
    config.write_text(
        json.dumps(
            {
                "exe": "build-hip/strata",
                "gpu": 1,
                "port": 8080,
                "args": ["--kv", "int8", "--pcie-frac", "0"],
                "env": {"STRATA_PF_FUSED": "0"},
            }
        )
    )
    answer = json.loads(
        run("--json", "--config", str(config), "--os", "linux", "--pack", "IQ3_S", env=pc).stdout
    )
    assert answer["switches"]["STRATA_HIP_WMMA"]["value"] == "1"  # --kv int8 from args
    assert answer["switches"]["STRATA_PF_FUSED"]["source"] == "config"
    assert answer["args"]["pcie_frac"]["value"] == "0"


def test_strix_halo_defaults(env, tmp_path):
    root = write_sysfs(tmp_path, [STRIX_HALO])
    answer = json.loads(run("--json", "--sysfs", str(root), "--os", "linux", env=env).stdout)
    on = {k: v["value"] for k, v in answer["switches"].items() if v["source"] == "arch-default"}
    assert on == {"STRATA_HC_Q8": "1", "STRATA_SH_STREAM": "1", "STRATA_HIPBLASLT_TABLE": "on"}
    assert answer["package"] == "halo"


@pytest.mark.parametrize(
    ("args", "extra_env", "message"),
    [
        (("--device", "gfx9000"), {}, "--device gfx9000: not a target strata knows ("),
        (
            ("--device", "gfx906"),
            {"STRATA_ARCH_PLUGIN": "hip_rdna3"},
            "Instinct MI50 / Instinct MI60 / Radeon VII (gfx906): "
            "STRATA_ARCH_PLUGIN=hip_rdna3, which is a wave32 build for gfx1100, gfx1101, "
            "gfx1102; gfx906 is wave64",
        ),
        (
            ("--device", "gfx1012"),
            {},
            "RX 5500 / RX 5500 XT (gfx1012, RDNA1): no installed plugin runs gfx1012 (RDNA1); ",
        ),
        (
            ("--explain", "STRATA_NOPE"),
            {},
            "--explain STRATA_NOPE: no switch of hip_rdna4 has that name",
        ),
        (("--config", "/no/such.toml"), {}, "/no/such.toml: cannot read the run config"),
    ],
)
def test_user_errors(pc, args, extra_env, message):
    result = run(*args, env=pc | extra_env, check=False)
    assert result.returncode == 2
    assert result.stderr.startswith(f"strata-core: error: {message}")
    assert result.stderr.count("\n") == 1


def test_no_gpu_here_plans_for_the_host_backend(env, tmp_path):
    result = run("--json", "--sysfs", str(tmp_path), env=env)
    answer = json.loads(result.stdout)
    assert answer["plugin"] == "host" and answer["device"]["gfx"] == "host"
    assert answer["notes"] == [
        "no GPU to run on (no visible GPU that an installed plugin runs); the host backend runs"
    ]
    assert answer["kernels"]["prompt_gemm"]["variant"] == "blas"
    assert answer["package"] is None and list(answer["tuning"]) == ["host"]
    # no host table: plan says so, and that the prompt GEMM is one matmul a shape
    host = answer["tuning"]["host"]
    assert (host["table"], host["used"]) == (None, False)
    assert host["reason"].startswith("no x86-64") and "-host-numpy" in host["reason"]
    assert answer["kernels"]["prompt_gemm"]["reason"] == (
        f"numpy's BLAS; one matmul per shape ({host['reason']})"
    )
    # threads: nothing set, no table, nothing measured yet: a run measures them
    assert answer["host_threads"] == {
        "threads": None,
        "wait_policy": None,
        "source": "not measured",
        "reason": "no host tuning table records them; none measured yet",
    }


def test_malformed_config_is_one_line(pc, tmp_path):
    config = tmp_path / "strata.toml"
    config.write_text("[env]\nSTRATA_HC_Q8 = false\n")
    result = run("--config", str(config), env=pc, check=False)
    assert (result.returncode, result.stderr) == (
        2,
        f"strata-core: error: {config}:2: env.STRATA_HC_Q8: expected a string, got False\n",
    )
