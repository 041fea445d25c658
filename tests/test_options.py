"""No option is ignored in silence, and usage errors are one line with exit status 2."""

import pytest
from cli_runner import strata_core


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("plan", "--output", "x.toml"), "strata-core: --output writes the run config of --toml; "
         "give --toml too"),
        (("plan", "--integrated"), "strata-core: --integrated describes a card named with "
         "--device; give --device too"),
        (("run", "--threads", "0"), "strata-core run: argument --threads: expected a whole "
         "number from 1, got '0'"),
        (("plan", "--device", ""), "strata-core plan: argument --device: expected a target "
         "such as gfx1201, got nothing"),
        (("plan", "--gpus", ""), "strata-core: --gpus : expected HIP numbers such as 1,0, or "
         "all"),
        (("plan", "--ple-table-gib", "nan"), "strata-core plan: argument --ple-table-gib: "
         "expected a finite number of GiB from 0, got 'nan'"),
        (("plan", "--ple-table-gib", "-1"), "strata-core plan: argument --ple-table-gib: "
         "expected a finite number of GiB from 0, got '-1'"),
        (("run", "--json", "--", "engine"), "strata-core: run --json reports the workload; "
         "with -- ENGINE the engine runs instead"),
        (("tune", "--dry-run"), "strata-core: --dry-run is for tune --switches; give "
         "--switches too"),
        (("tune", "--switches", "--tokens", "256"), "strata-core: --tokens is for a table "
         "calibration, not tune --switches"),
        (("plan", "--pack", "iq9"), "strata-core plan: argument --pack: 'iq9' is not a pack "
         "format (IQ3_S, IQ3_XXS, Q2_0, IQ2_XS, IQ2_S, IQ1_M, IQ4_XS, UD-IQ4_XS, Q2_K, Q3_K, "
         "Q4_K, Q5_K, Q6_K, Q8_0, Q5_1)"),
    ],
)  # fmt: skip
def test_an_option_that_would_be_ignored_is_one_line(env, tmp_path, args, line):
    result = strata_core(*args, env=env, check=False, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == line + "\n"


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
        "strata-core: --explain STRATA_HIP_WMAM: no switch of hip_rdna4 has that name; did you "
        "mean STRATA_HIP_WMMA?\n"
    )
