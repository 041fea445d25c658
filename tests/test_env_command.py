"""`strata-core env`: one command for what a report of a run needs."""

import json

from cli_runner import strata_core

from strata_core.testing.sysfs import R9700, write_sysfs


def test_env_reports_versions_devices_variables_and_the_run_config(env, tmp_path):
    root = write_sysfs(tmp_path / "sys", [R9700])
    config = tmp_path / "strata.toml"
    config.write_text('exe = "build-hip/strata"\n[env]\nSTRATA_HC_Q8 = "0"\n')
    carried = env | {"STRATA_TOPK_OLD": "1", "HIP_VISIBLE_DEVICES": "0"}
    chosen = ("--sysfs", str(root), "--config", str(config))
    answer = json.loads(strata_core("env", "--json", *chosen, env=carried).stdout)
    assert answer["schema_version"] == 1 and answer["strata"] == "0.1.0"
    assert {"core", "hip_rdna4", "cuda"} <= {p["name"] for p in answer["plugins"]}
    assert answer["python"].startswith(".".join(map(str, __import__("sys").version_info[:2])))
    assert set(answer["libraries"]) == {"hipblaslt", "rocblas", "cublaslt"}
    (card,) = answer["devices"]
    assert (card["gfx"], card["plugin"], card["selected"]) == ("gfx1201", "hip_rdna4", True)
    assert answer["variables"]["STRATA_TOPK_OLD"] == "1"
    assert answer["variables"]["HIP_VISIBLE_DEVICES"] == "0"
    assert answer["run_config"] == {
        "path": str(config),
        "gpu": None,
        "exe": "build-hip/strata",
        "env": {"STRATA_HC_Q8": "0"},
        "args": [],
    }
    text = strata_core("env", *chosen, env=carried).stdout.splitlines()
    assert text[0] == "strata 0.1.0"
    assert "  STRATA_TOPK_OLD=1" in text and f"run config: {config}" in text
    assert any(line.startswith("  * 0  ") and "gfx1201" in line for line in text)


def test_env_text_has_no_python_values_and_says_the_cpu_numpy_and_rocm(env, tmp_path):
    root = write_sysfs(tmp_path / "sys", [R9700])
    config = tmp_path / "strata.toml"
    config.write_text('gpu = 0\nargs = ["--kv", "int8"]\n[env]\nSTRATA_HIP_WMMA = "auto"\n')
    chosen = ("--sysfs", str(root), "--config", str(config))
    answer = json.loads(strata_core("env", "--json", *chosen, env=env).stdout)
    assert answer["cpu"]["name"] and answer["cpu"]["isa_level"]
    assert answer["cpu"]["host_kernels"] in ("avx512vnni", "avxvnni", "avx2", "baseline")
    assert answer["numpy"]["version"] == __import__("numpy").__version__
    assert answer["backend"] == "hip" and answer["devices"][0]["backend"] == "hip"
    text = strata_core("env", *chosen, env=env).stdout
    lines = text.splitlines()
    assert "  gpu: 0" in lines and "  args: --kv int8" in lines
    assert "    STRATA_HIP_WMMA=auto" in lines
    assert any(line.startswith(f"cpu: {answer['cpu']['name']} (") for line in lines)
    assert any(line.startswith(f"numpy: {answer['numpy']['version']} (BLAS: ") for line in lines)
    assert "{'" not in text and "None" not in text


def test_env_names_the_rocm_install(env, tmp_path):
    (tmp_path / "rocm" / ".info").mkdir(parents=True)
    (tmp_path / "rocm" / ".info" / "version").write_text("7.2.4-101\n")
    chosen = ("--sysfs", str(write_sysfs(tmp_path / "sys", [R9700])))
    text = strata_core("env", *chosen, env=env | {"ROCM_PATH": str(tmp_path / "rocm")}).stdout
    assert f"rocm: 7.2.4-101 ({tmp_path / 'rocm'})" in text.splitlines()


def runtimes(text: str) -> list[str]:
    lines = text.splitlines()
    return lines[lines.index("runtimes:") + 1 : lines.index("libraries:")]


def test_env_says_what_each_runtime_reported_or_where_it_looked(
    env, tmp_path, stand_in, nvml_stand_in
):
    """Whatever sysfs shows: the HIP runtime's library, version and devices seen, NVML's
    driver and CUDA versions; where none is found, the libraries tried; --no-hip: not asked."""
    chosen = ("env", "--sysfs", str(tmp_path))
    found = env | {"STRATA_HIP_LIBRARY": stand_in, "STRATA_NVML_LIBRARY": nvml_stand_in}
    assert runtimes(strata_core(*chosen, "--hip", env=found).stdout) == [
        f"  HIP runtime {stand_in} (version 7.1.0) sees 1 device",
        f"  NVML {nvml_stand_in} (driver 580.159.04, CUDA 13.0) sees 1 device",
    ]
    answer = json.loads(strata_core(*chosen, "--json", env=found).stdout)
    assert answer["runtimes"][0] == f"HIP runtime {stand_in} (version 7.1.0) sees 1 device"
    missing = env | {
        "STRATA_HIP_LIBRARY": str(tmp_path / "libamdhip64.so.7"),
        "STRATA_NVML_LIBRARY": str(tmp_path / "libnvidia-ml.so.1"),
    }
    assert runtimes(strata_core(*chosen, env=missing).stdout) == [
        f"  no HIP runtime: STRATA_HIP_LIBRARY={tmp_path / 'libamdhip64.so.7'}: no such file",
        f"  no NVML: STRATA_NVML_LIBRARY={tmp_path / 'libnvidia-ml.so.1'}: no such file",
    ]
    off = runtimes(strata_core(*chosen, "--no-hip", env=found | {"STRATA_CUDA_PROBE": "0"}).stdout)
    assert off == ["  HIP runtime: not asked (--no-hip)", "  NVML: not asked (STRATA_CUDA_PROBE=0)"]
