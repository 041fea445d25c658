"""No option is ignored in silence, and usage errors are one line with exit status 2."""

import json
import tomllib

import pytest
from cli_runner import strata_core


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("plan", "--output", "x.toml"), "--output writes the run config of --toml; "
         "give --toml too"),
        (("plan", "--integrated"), "--integrated describes a card named with "
         "--device; give --device too"),
        (("run", "--threads", "0"), "run: argument --threads: expected a whole "
         "number from 1, got '0'"),
        (("plan", "--device", ""), "plan: argument --device: expected a target "
         "such as gfx1201, got nothing"),
        (("plan", "--gpus", ""), "--gpus : expected HIP numbers such as 1,0, or "
         "all"),
        (("plan", "--ple-table-gib", "nan"), "plan: argument --ple-table-gib: "
         "expected a finite number of GiB from 0, got 'nan'"),
        (("plan", "--ple-table-gib", "-1"), "plan: argument --ple-table-gib: "
         "expected a finite number of GiB from 0, got '-1'"),
        (("run", "--json", "--", "engine"), "run --json reports the workload; "
         "with -- ENGINE the engine runs instead"),
        (("tune", "--dry-run"), "--dry-run is for tune --switches; give "
         "--switches too"),
        (("tune", "--switches", "--tokens", "256"), "--tokens is for a table "
         "calibration, not tune --switches"),
        (("plan", "--device", "gfx1201", "--gpus", "0,1"), "--gpus is about the "
         "cards of this PC; --device plans for a card that is not in it"),
        (("plan", "--device", "gfx1201", "--hip"), "--hip is about the cards of "
         "this PC; --device plans for a card that is not in it"),
        (("plan", "--device", "gfx1201", "--explain", ""), "--explain needs a "
         "switch name, such as STRATA_HIP_WMMA or --pcie-frac"),
        (("plan", "--sysfs", ".", "--hipblaslt", "banana"), "--hipblaslt banana: "
         "expected a version such as 1.4.1 or 100401"),
        (("plan", "--toml", "--force"), "--force lets --output replace a file; "
         "give --output too"),
        (("plan", "--pack", "iq9_s"), "plan: argument --pack: invalid choice: 'iq9_s' "
         "(choose from 'IQ3_S', 'IQ3_XXS', 'Q2_0', 'IQ2_XS', 'IQ2_S', 'IQ1_M', 'IQ4_XS', "
         "'UD-IQ4_XS', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K', 'Q8_0', 'Q5_1'); did you mean "
         "IQ3_S?"),
    ],
)  # fmt: skip
def test_an_option_that_would_be_ignored_is_one_line(env, tmp_path, args, line):
    result = strata_core(*args, env=env, check=False, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == f"strata-core: error: {line}\n"


@pytest.mark.parametrize(
    ("name", "first_line"),
    [("strata_hip_wmma", "STRATA_HIP_WMMA = "), ("--pcie-frac", "--pcie-frac = "),
     ("--PCIE-FRAC", "--pcie-frac = ")],
)  # fmt: skip
def test_explain_takes_a_name_in_any_case_and_a_flag(env, name, first_line):
    out = strata_core("plan", "--device", "gfx1201", "--explain", name, env=env).stdout
    assert out.startswith(first_line)


def test_explain_suggests_the_closest_name(env):
    result = strata_core(
        "plan", "--device", "gfx1201", "--explain", "STRATA_HIP_WMAM", env=env, check=False
    )
    assert result.returncode == 2
    assert result.stderr == (
        "strata-core: error: --explain STRATA_HIP_WMAM: no switch of hip_rdna4 has that name; "
        "did you mean STRATA_HIP_WMMA?\n"
    )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("plan", "--json", "--kv", "bogus"), "plan: argument --kv: invalid choice: 'bogus'"),
        (("run", "--json", "--threads", "-3"), "run: argument --threads: expected a whole "
         "number from 1, got '-3'"),
    ],
)  # fmt: skip
def test_a_usage_error_with_json_is_a_json_answer(env, tmp_path, args, error):
    result = strata_core(*args, env=env, check=False, cwd=tmp_path)
    assert result.returncode == 2
    answer = json.loads(result.stdout)
    assert answer["schema_version"] == 1 and answer["exit"] == 2
    assert answer["error"].startswith(error)
    assert result.stderr == f"strata-core: error: {answer['error']}\n"


def test_a_misspelt_command_gets_a_suggestion(env):
    result = strata_core("plgins", env=env, check=False)
    assert result.returncode == 2
    assert result.stderr == (
        "strata-core: error: 'plgins' is not a command (plugins, devices, env, plan, run, tune, "
        "table, help); did you mean plugins?\n"
    )


@pytest.mark.parametrize("args", [("devices", "--js"), ("plan", "--dev", "gfx1201")])
def test_an_abbreviated_option_is_refused(env, tmp_path, args):
    result = strata_core(*args, env=env, check=False, cwd=tmp_path)
    assert result.returncode == 2
    assert f"unrecognized arguments: {args[1]}" in result.stderr


@pytest.mark.parametrize("command", ["plugins", "devices", "env", "plan", "run", "tune"])
def test_each_command_has_a_description_and_an_example(env, command):
    text = strata_core(command, "--help", env=env).stdout
    usage, description = text.split("\n\n")[:2]
    assert usage.startswith(f"usage: strata-core {command}")
    assert description and not description.startswith("options:")
    assert f"examples:\n  strata-core {command}" in text


def test_run_help_shows_the_engine_and_devices_help_is_not_amd_only(env):
    assert strata_core("run", "--help", env=env).stdout.startswith(
        "usage: strata-core run [options] [-- ENGINE ARGS...]\n"
    )
    top = strata_core("--help", env=env).stdout
    assert "    devices             list the GPUs (AMD and NVIDIA) and who runs each\n" in top


def test_a_target_in_any_case(env):
    upper = json.loads(strata_core("plan", "--json", "--device", "GFX1201", env=env).stdout)
    assert upper["device"]["gfx"] == "gfx1201" and upper["plugin"] == "hip_rdna4"


def test_a_bad_strata_cache_is_a_warning(env, tmp_path):
    result = strata_core("plan", "--sysfs", str(tmp_path), env=env | {"STRATA_CACHE": "banana"})
    assert result.stderr.splitlines()[0] == (
        "strata-core: warning: STRATA_CACHE=banana: expected 0 (off) or 1 (on); the answer "
        "cache stays on"
    )


def test_plan_toml_does_not_replace_a_file_without_force(env, tmp_path):
    mine = tmp_path / "strata.toml"
    mine.write_text("# my notes\ngpu = 1\n")
    chosen = ("plan", "--sysfs", str(tmp_path), "--toml", "--output", str(mine))
    refused = strata_core(*chosen, env=env, check=False)
    assert refused.returncode == 2 and mine.read_text() == "# my notes\ngpu = 1\n"
    assert refused.stderr.splitlines()[-1] == (
        f"strata-core: error: --output {mine}: the file exists; --force replaces it (its comments "
        "and all)"
    )
    strata_core(*chosen, "--force", env=env)
    assert mine.read_text().startswith("# strata run config from `strata-core plan --toml`")


def test_plan_toml_without_a_gpu_says_why_it_is_empty(env, tmp_path):
    text = strata_core("plan", "--sysfs", str(tmp_path), "--toml", env=env).stdout
    assert tomllib.loads(text) == {}
    assert text.splitlines()[1].startswith("# no GPU to run on (")
    assert text.splitlines()[1].endswith("the host backend runs: nothing is decided for a card")


def test_plan_toml_output_makes_no_folder_and_says_what_it_wrote(env, tmp_path):
    """No folder the user did not ask for: one line naming the missing one, exit 2; on
    success the file written is named."""
    missing = tmp_path / "nonexistent" / "dir"
    chosen = ("plan", "--sysfs", str(tmp_path), "--toml", "--output")
    refused = strata_core(*chosen, str(missing / "s.toml"), env=env, check=False)
    assert refused.returncode == 2 and not (tmp_path / "nonexistent").exists()
    assert refused.stderr.splitlines()[-1] == (
        f"strata-core: error: {missing / 's.toml'}: cannot write (no folder {missing}); nothing "
        "was changed"
    )
    written = strata_core(*chosen, str(tmp_path / "s.toml"), env=env)
    assert written.stderr.splitlines()[-1] == f"strata-core: wrote {tmp_path / 's.toml'}"
    assert (tmp_path / "s.toml").read_text().startswith("# strata run config")


@pytest.mark.parametrize(
    ("option", "given", "taken"),
    [("--kv", "INT8", "int8"), ("--kv", "Bf16", "bf16"), ("--os", "WINDOWS", "windows"),
     ("--vision", "CPU", "cpu"), ("--pack", "iq3_s", "IQ3_S"),
     ("--pack", "ud-iq4_xs", "UD-IQ4_XS")],
)  # fmt: skip
def test_every_option_of_a_fixed_set_takes_any_case(env, option, given, taken):
    """--kv INT8 as --pack iq3_s and --device GFX1201 are: one rule for every choice."""
    answer = json.loads(
        strata_core("plan", "--json", "--device", "gfx1201", option, given, env=env).stdout
    )
    asked = strata_core("plan", "--json", "--device", "gfx1201", option, taken, env=env).stdout
    assert answer == json.loads(asked)
    if option == "--os":
        assert answer["os"] == taken


def test_the_log_format_is_a_choice_in_any_case_too(env):
    result = strata_core("--log-format", "JSON", "plan", "--device", "gfx1201", env=env)
    assert all(json.loads(line)["level"] for line in result.stderr.splitlines())


@pytest.mark.parametrize(
    ("args", "hint"),
    [(("table", "chek", "x.txt"), "table: argument ACTION: invalid choice: 'chek' (choose from "
      "'check'); did you mean check?"),
     (("plan", "--jsn"), "plan: unrecognized arguments: --jsn; did you mean --json?"),
     (("table", "check", "--jsn", "x.txt"), "table check: unrecognized arguments: --jsn; did "
      "you mean --json?"),
     (("plan", "--kv", "Int9"), "plan: argument --kv: invalid choice: 'Int9' (choose from "
      "'int8', 'f16', 'bf16'); did you mean int8?")],
)  # fmt: skip
def test_a_misspelt_action_option_or_value_gets_a_suggestion(env, tmp_path, args, hint):
    result = strata_core(*args, env=env, check=False, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == f"strata-core: error: {hint}\n"


def test_profile_help_names_the_default_and_a_misspelt_name_the_shipped_ones(env, tmp_path):
    help_text = " ".join(strata_core("plan", "--help", env=env).stdout.split())
    assert (
        "--profile NAME|FILE model profile of the workload: small-moe, deep-context, "
        "deep-context-k2048, large-moe, dense-8b or a file (default: small-moe)"
    ) in help_text
    result = strata_core(
        "plan", "--profile", "smal-moe", "--sysfs", str(tmp_path), env=env, check=False,
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "strata-core: error: smal-moe: cannot read the profile (No such file or directory); the "
        "shipped profiles are small-moe, deep-context, deep-context-k2048, large-moe, dense-8b; "
        "did you mean small-moe?"
    )
