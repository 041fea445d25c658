"""Output for people fits the terminal: no line wider than $COLUMNS (tables never wider than
100 columns), reasons on their own indented lines, words and the page's start lines whole;
times in the unit a person reads and counts with their nouns agreeing. Output for machines
(--json, logfmt, JSON lines) and to a pipe is never wrapped."""

import json
import re
from pathlib import Path

import pytest
from cli_runner import strata_core

from strata_core.people import counted, duration
from strata_core.testing.sysfs import MI50, R9700, RADEON_780M, write_nvidia_gpu, write_sysfs

TINY = Path(__file__).parent / "fixtures" / "profiles" / "tiny.toml"
START = (
    "hipBLASLt tuning table: none (off by default on gfx1201: a table changes rounding, so "
    "packaged engines take it by default only on gfx1151; STRATA_HIPBLASLT_TABLE=on takes it)"
)


@pytest.fixture
def trees(tmp_path):
    return {
        "amd": write_sysfs(tmp_path / "amd", [R9700, RADEON_780M]),
        "pair": write_sysfs(tmp_path / "pair", [MI50, R9700]),
        "nvidia": write_nvidia_gpu(tmp_path / "nvidia", "0000:41:00.0"),
        "none": tmp_path,
    }


COMMANDS = {
    "plan": ("plan", "--sysfs", "amd"),
    "plan -v": ("plan", "-v", "--sysfs", "amd"),
    "plan on the host": ("plan", "-v", "--sysfs", "none"),
    "devices": ("devices", "-v", "--sysfs", "pair", "--gpus", "0,1"),
    "devices with an NVIDIA card": ("devices", "-v", "--sysfs", "nvidia"),
    "plugins": ("plugins",),
    "env": ("env", "--sysfs", "amd"),
    "run on the host": ("run", "--profile", str(TINY), "--sysfs", "none"),
    "tune on the host": ("tune", "--host", "--case", "64,o,256,256,f32", "--repeats", "3"),
}


@pytest.mark.parametrize("name", COMMANDS)
def test_no_line_is_wider_than_columns(env, trees, tmp_path, name):
    args = [str(trees[a]) if a in trees else a for a in COMMANDS[name]]
    if args[0] == "tune":
        args += ["--output", f"{tmp_path}/"]
    result = strata_core(*args, env=env | {"COLUMNS": "100"})
    lines = (result.stdout + result.stderr).splitlines()
    # a word wider than the terminal (this test's folder names are long) stays whole
    over = [line for line in lines if len(line) > 100 and " " in line.strip()]
    assert not over, over
    wide = strata_core(*args, env=env | {"COLUMNS": "250"})
    if name.startswith("plan"):  # the same words, and the page's start line whole
        words = " ".join(result.stdout.split())
        assert words == " ".join(wide.stdout.split())
    if name == "plan":
        assert START in " ".join(result.stdout.split())
        assert f"  {START}" in wide.stdout.splitlines()


def test_a_reason_too_long_for_its_line_goes_on_its_own_lines(env, trees):
    out = strata_core("plan", "--sysfs", str(trees["amd"]), env=env | {"COLUMNS": "100"}).stdout
    lines = out.splitlines()
    at = lines.index("  topk_prompt")
    assert lines[at + 1].startswith("      wide: 131072 cells on a prompt read: ")
    assert "  matvec_q8_0       v_dot4_i32_iu8: gfx1201's int8 dot instruction" in lines


def test_a_table_fits_in_100_columns_on_a_pipe_too(env, trees):
    """Without a terminal nothing is wrapped but a table, which keeps to 100 columns."""
    out = strata_core("devices", "--sysfs", str(trees["pair"]), env=env).stdout.splitlines()
    table = [line for line in out if not line.startswith("      ")]
    assert max(len(line) for line in table) <= 100
    assert out[0].split() == ["#", "card", "target", "family", "kind", "VRAM", "PCI"]
    assert out[1].split()[-2:] == ["GiB", "43:00.0"]  # PCI as lspci shows it in domain 0


def test_machines_and_pipes_get_whole_lines(env, trees):
    root = str(trees["amd"])
    piped = strata_core("plan", "--sysfs", root, env=env).stdout.splitlines()
    assert f"  {START}" in piped
    narrow = env | {"COLUMNS": "60"}
    answer = json.loads(strata_core("plan", "--json", "--sysfs", root, env=narrow).stdout)
    assert START in answer["log"]
    said = strata_core("run", "--log-format", "json", "--sysfs", root, "--", "true", env=narrow)
    assert START in [json.loads(line)["msg"] for line in said.stderr.splitlines()]
    said = strata_core("run", "--sysfs", root, "--", "true", env=narrow).stderr.splitlines()
    assert f"strata-core: {START}" not in said  # for people on 60 columns: wrapped
    assert START in " ".join(line.strip() for line in said)


def test_an_answer_drawn_for_one_width_is_not_given_to_another(env, trees):
    root = str(trees["amd"])
    narrow = strata_core("plan", "--sysfs", root, env=env | {"COLUMNS": "80"}).stdout
    assert max(len(line) for line in narrow.splitlines()) <= 80
    wide = strata_core("plan", "--sysfs", root, env=env).stdout  # the answer cache is on
    assert f"  {START}" in wide.splitlines()


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(1.3072904, "1.31 s"), (0.0990812, "99.1 ms"), (0.000352, "352 us"), (0.0000163, "16.3 us"),
     (2.5e-7, "0.250 us"), (0, "0 s"), (125.0, "125 s")],
)  # fmt: skip
def test_times_in_the_unit_a_person_reads(seconds, shown):
    assert duration(seconds) == shown


def test_counts_agree_with_their_nouns():
    assert [counted(n, "row") for n in (0, 1, 2)] == ["0 rows", "1 row", "2 rows"]
    assert counted(1, "more switch", "more switches") == "1 more switch"


def test_tune_and_run_say_times_and_counts_as_a_person_reads_them(env, tmp_path):
    tuned = strata_core(
        "tune", "--host", "--case", "64,o,256,256,f32", "--repeats", "3", "--output",
        f"{tmp_path}/", env=env,
    ).stderr  # fmt: skip
    assert ": 1 case, 3 rounds each" in tuned and "tune: wrote 1 row (" in tuned
    default = re.search(r"default (\d+(?:\.\d+)?) (s|ms|us), 5 solutions measured", tuned)
    assert default and float(default[1]) < 1000
    ran = strata_core("run", "--threads", "1", "--profile", str(TINY), "--sysfs", str(tmp_path),
                      env=env).stdout  # fmt: skip
    assert ", 1 thread (user); DRAM read " in ran.splitlines()[0]
    figures = re.findall(r"(\d+(?:\.\d+)?) (ms|us)\b", ran)
    assert figures and all(float(value) < 1000 for value, _ in figures)


def test_the_host_plan_names_the_cpu_as_no_card(env, tmp_path):
    out = strata_core("plan", "--sysfs", str(tmp_path), env=env).stdout
    first = out.splitlines()[0]
    assert first.startswith("plan for ") and first.endswith(" (the host's CPU, no GPU) on Linux")
    assert "discrete" not in first
