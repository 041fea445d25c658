"""Rules of the engine's HIP backend page (AMD_HIP.md) that the plan once got wrong, each against
the page's words."""

import json
import re
import tomllib
from functools import partial
from pathlib import Path

import pytest
from cli_runner import strata_core

from strata_core.api.kernels import topk_choice
from strata_core.plan.core_switches import (
    CMAKE,
    ENGINE,
    GFX906_BUILD,
    SETUP,
    SOURCE,
    page_variables,
)
from strata_core.testing.distributions import write_distribution
from strata_core.testing.sysfs import (
    MI50,
    R9700,
    RADEON_780M,
    RX_7900_XTX,
    STRIX_HALO,
    fake_gpu,
    write_sysfs,
)
from strata_core.tuning.switch_trials import TRIALS
from strata_core.tuning.kinds import KINDS

FIXTURES = Path(__file__).parent / "fixtures/tables"
TINY = Path(__file__).parent / "fixtures/profiles/tiny.toml"
plan = partial(strata_core, "plan", "--json", "--os", "linux")


def kernels(env, gfx, *args, **switches):
    answer = json.loads(plan("--device", gfx, *args, env=env | switches).stdout)
    return answer["kernels"]


# "Past about 135K cells (and from about 90K cells on a prompt read) the top-k selection runs
# the wide kernel"; STRATA_TOPK_STREAM=0 runs "the register kernel in the 90K-135K band";
# STRATA_TOPK_OLD=1 "the original top-k kernel".
@pytest.mark.parametrize(
    ("cells", "prompt_read", "switches", "variant"),
    [
        (131_072, True, {}, "wide"),
        (131_072, False, {}, "register"),
        (89_999, True, {}, "register"),
        (90_000, True, {}, "wide"),
        (135_000, False, {}, "register"),
        (135_001, False, {}, "wide"),
        (90_000, True, {"STRATA_TOPK_STREAM": "0"}, "register"),
        (135_000, True, {"STRATA_TOPK_STREAM": "0"}, "register"),
        (135_001, True, {"STRATA_TOPK_STREAM": "0"}, "wide"),
        (131_072, True, {"STRATA_TOPK_STREAM": "0"}, "register"),
        (131_072, False, {"STRATA_TOPK_STREAM": "0"}, "register"),
        (200_000, True, {"STRATA_TOPK_STREAM": "0"}, "wide"),
        (200_000, True, {"STRATA_TOPK_OLD": "1"}, "old"),
    ],
)
def test_topk_bands(cells, prompt_read, switches, variant):
    assert topk_choice(switches, cells, prompt_read).variant == variant


def test_topk_stream_is_calibrated_on_a_prompt_read(env, tmp_path, host_isa):
    """tune --switches measures STRATA_TOPK_STREAM=0 where it changes the kernel: the prompt
    read's top-k in the band (the register kernel against the wide one), where the host's own
    band runs the wide kernel (the vector code; the portable one keeps the heap at k 256)."""
    trial = next(t for t in TRIALS if t.switch == "STRATA_TOPK_STREAM")
    assert trial.op == "topk_prompt"
    profile = tmp_path / "band.toml"
    profile.write_text('name = "band"\ncontext_cells = 100000\n')
    result = strata_core(
        "tune", "--switches", "--repeats", "3", "--profile", str(profile),
        "--config", str(tmp_path / "strata.toml"), env=env | {"STRATA_HOST_ISA": host_isa},
    )  # fmt: skip
    (said,) = [line for line in result.stderr.splitlines() if "STRATA_TOPK_STREAM" in line]
    if host_isa == "baseline":
        assert said == (
            "strata-core: tune: STRATA_TOPK_STREAM=0: the host backend runs topk_prompt the "
            "same way (register) at this workload"
        )
    else:
        assert re.fullmatch(TOPK_STREAM_MEASURED, said), said


#: one measurement of a switch trial: off -> on, the gain and its spread, pairs and time
_MEASUREMENT = (
    r"[\d.]+ [nmu]?s -> [\d.]+ [nmu]?s, [-+][\d.]+% ± [\d.]+% "
    r"\(medians of \d+ pairs? in [\d.]+ [nmu]?s(, the time budget ran out first)?\)"
)
#: STRATA_TOPK_STREAM=0 measured twice on the prompt read's top-k, and the verdict
TOPK_STREAM_MEASURED = (
    rf"strata-core: tune: STRATA_TOPK_STREAM=0: {_MEASUREMENT}; again {_MEASUREMENT}; "
    r"(past 3% by more than the spread: kept|the measurements disagree: left unset"
    r"|not past 3% by more than the spread: left unset)"
)


@pytest.mark.parametrize(("queries", "variant"), [(63, "fp32"), (64, "wmma")])
def test_wmma_auto_takes_batches_of_its_minimum_or_more(env, tmp_path, queries, variant):
    """STRATA_HIP_WMMA "=auto takes it only for batches of STRATA_HIP_WMMA_MIN_Q (64) or more
    queries": 64 queries take WMMA attention, 63 do not."""
    profile = tmp_path / "queries.toml"
    profile.write_text(f'name = "queries"\nprompt_queries = {queries}\n')
    here = ("--kv", "int8", "--profile", str(profile))
    chosen = kernels(env, "gfx1201", *here, STRATA_HIP_WMMA="auto")
    attention = chosen["prompt_attention"]
    assert attention["variant"] == variant
    fewer = "fewer than" if variant == "fp32" else "at least"
    assert attention["reason"] == f"STRATA_HIP_WMMA=auto and {queries} queries, {fewer} 64"


def test_the_plan_names_both_top_k_kernels(env):
    """On a card the plan quotes the page's band for each top-k: the wide kernel on a prompt
    read from 90K cells, the register kernel below 135K cells on a decode step."""
    chosen = kernels(env, "gfx1201")
    assert chosen["topk_prompt"]["variant"] == "wide"
    assert chosen["topk_prompt"]["reason"].endswith(
        "131072 cells on a prompt read: '(and from about 90K cells on a prompt read) the top-k "
        "selection runs the wide kernel'"
    )
    assert chosen["topk"]["variant"] == "register"
    assert chosen["topk"]["reason"].endswith("131072 cells: below 135K the register kernel")


# Prompt GEMMs: "hipBLAS, or hipBLASLt with a matching tuning table"; STRATA_PF_GEMM "gfx11
# only ... RDNA4 runs neither"; the RDNA2 switches.
@pytest.mark.parametrize(
    ("gfx", "switches", "variant", "words"),
    [
        ("gfx1201", {}, "hipblas", "the prompt GEMMs run through hipBLAS"),
        ("gfx1201", {"STRATA_PF_GEMM": "1"}, "hipblas", "RDNA4 runs neither"),
        ("gfx1100", {}, "hipblas", "the prompt GEMMs run through hipBLAS"),
        ("gfx1100", {"STRATA_PF_GEMM": "1"}, "wmma", "the 128 x 256 WMMA GEMM"),
        ("gfx1030", {}, "rocblas", "hipBLASLt ships no gfx1030 kernels"),
        ("gfx1030", {"STRATA_HIP_PROMPT_F16": "1"}, "rocblas-f16", "FP16 in and out"),
        ("gfx1031", {"STRATA_RDNA2_SGEMM": "1"}, "rocblas-sgemm", "SGEMM"),
        (
            "gfx1030",
            {"STRATA_HIP_PROMPT_F16": "1", "STRATA_RDNA2_SGEMM": "1"},
            "rocblas-f16+sgemm",
            "the FP16 route runs first and SGEMM takes the products it leaves",
        ),
        ("gfx1201", {"STRATA_RDNA2_SGEMM": "all"}, "hipblas-sgemm", "on any AMD card"),
        ("gfx906", {}, "hipblas", "hipBLASLt is not used"),
        ("gfx1152", {"STRATA_PF_GEMM": "1"}, "hipblas", "gfx1152 builds portable kernels"),
    ],
)
def test_the_prompt_gemm_path(env, gfx, switches, variant, words):
    gemm = kernels(env, gfx, **switches)["prompt_gemm"]
    assert gemm["variant"] == variant and words in gemm["reason"]


def test_the_igpu_prompt_set_runs_the_wmma_gemm_on_the_780m(env):
    """ "STRATA_PF_GEMM=1  The prompt's FP16 projections on the 128 x 256 WMMA GEMM", on by
    default on the Radeon 780M (gfx1103, Linux)."""
    assert kernels(env, "gfx1103", "--integrated")["prompt_gemm"]["variant"] == "wmma"


def test_a_matching_hipblaslt_table_makes_the_path_hipblaslt(env, tmp_path):
    table = tmp_path / "gfx1201-hipblaslt-100202.txt"
    text = (FIXTURES / "gfx1151-hipblaslt-100401.txt").read_text()
    table.write_text(text.replace("gfx1151 100401", "gfx1201 100202"))
    env = env | {"STRATA_TUNING_DIR": str(tmp_path), "STRATA_HIPBLASLT_TABLE": "on"}
    gemm = kernels(env, "gfx1201", "--hipblaslt", "100202")["prompt_gemm"]
    assert gemm == {
        "variant": "hipblaslt",
        "reason": f"hipBLASLt with the tuning table {table}",
    }


def test_gfx1152_has_no_matrix_core_kernels(env):
    """ "gfx1152, Radeon 860M / 840M  Builds with a warning; portable kernels"."""
    chosen = kernels(
        env, "gfx1152", "--integrated", "--kv", "int8", STRATA_HIP_WMMA="1", STRATA_PF_GEMM="1"
    )
    assert chosen["prompt_attention"] == {
        "variant": "fp32",
        "reason": "gfx1152 builds with a warning; portable kernels",
    }
    assert chosen["prompt_gemm"]["variant"] != "wmma"


@pytest.mark.parametrize(
    ("gfx", "why"),
    [
        ("gfx906", "gfx906: hipBLASLt is not used"),
        (
            "gfx1030",
            "gfx1030: hipBLASLt ships no gfx1030 kernels, so there is no hipBLASLt table and "
            "the plain hipBLAS path runs",
        ),
    ],
)
def test_no_hipblaslt_table_where_the_engine_runs_no_hipblaslt(env, tmp_path, gfx, why):
    """gfx906: "hipBLASLt is not used"; gfx103x: "hipBLASLt ships no gfx1030 kernels, so there
    is no hipBLASLt table", whatever STRATA_HIPBLASLT_TABLE says and whatever lies in a
    folder; a forced file is named as not used."""
    name = f"{gfx}-hipblaslt-100401.txt"
    text = (FIXTURES / "gfx1151-hipblaslt-100401.txt").read_text()
    (tmp_path / name).write_text(text.replace("gfx1151", gfx))
    env = env | {
        "STRATA_TUNING_DIR": str(tmp_path),
        "STRATA_HIPBLASLT_TABLE": "on",
        "STRATA_HIPBLASLT_TUNING": str(tmp_path / name),
    }
    answer = json.loads(plan("--device", gfx, "--hipblaslt", "100401", env=env).stdout)
    assert answer["tuning"]["hipblaslt"] == {
        "table": None,
        "used": False,
        "reason": why,
        "rows": None,
    }
    assert f"hipBLASLt tuning table: none ({why})" in answer["log"]
    assert f"STRATA_HIPBLASLT_TUNING={tmp_path / name} is not used: {why}" in answer["warnings"]
    assert not answer["kernels"]["prompt_gemm"]["variant"].startswith("hipblaslt")


def test_a_chosen_card_no_plugin_runs_is_refused(env, tmp_path):
    """ "Every chosen card must be one of the supported architectures": --gpus naming a card
    that no plugin runs is refused by plan and run, naming the card and its family."""
    root = write_sysfs(tmp_path, [R9700, fake_gpu("gfx1012", pci_bus=0x04)])
    for command in ("plan", "run"):
        result = strata_core(command, "--sysfs", str(root), "--gpus", "1,0", env=env, check=False)
        assert result.returncode == 2 and result.stderr.count("\n") == 1
        assert result.stderr.startswith(
            "strata-core: error: --gpus from command line: HIP 1 is an RDNA1 card "
            "(gfx1012, RDNA1), which no installed plugin runs gfx1012 (RDNA1)"
        )
        assert result.stderr.endswith(
            "; every chosen card must be one of the supported architectures\n"
        )


def test_the_notes_about_the_chosen_cards_reach_plan_and_run(env, tmp_path):
    """ "Cards of two families (for example gfx1100 and gfx1201) need a system ROCm 7"."""
    root = write_sysfs(tmp_path, [R9700, fake_gpu("gfx1100", pci_bus=0x04)])
    note = "cards of two families (RDNA3, RDNA4) need a system ROCm 7: AMD's wheels hold one family"
    chosen = ("--sysfs", str(root), "--gpus", "1,0")
    devices = json.loads(strata_core("devices", "--json", *chosen, env=env).stdout)
    assert note in devices["notes"]
    assert json.loads(plan(*chosen, env=env).stdout)["notes"] == [note]
    assert f"strata-core: {note}" in strata_core("plan", *chosen, env=env).stderr.splitlines()
    ran = strata_core("run", "--json", "--profile", str(TINY), *chosen, env=env)
    assert f"strata-core: {note}" in ran.stderr.splitlines()


def test_a_windows_split_gets_no_rocm_note(env, tmp_path):
    """The ROCm 7 note is setup's on Linux ("Install with setup (source checkout, Linux)"); on
    Windows the package carries its runtime: Strix Halo beside an RX 7900 XTX takes the rdna3
    package, which holds gfx1100 and gfx1151, and no note says they need a ROCm."""
    root = write_sysfs(tmp_path, [STRIX_HALO, RX_7900_XTX])
    chosen = ("--sysfs", str(root), "--gpus", "0,1")
    on = partial(strata_core, "plan", "--json", *chosen, env=env)
    windows = json.loads(on("--os", "windows").stdout)
    assert windows["package"] == "rdna3" and windows["notes"] == []
    assert not any("ROCm 7" in w for w in windows["warnings"])
    linux = json.loads(on("--os", "linux").stdout)
    assert linux["notes"] == [
        "cards of two families (RDNA3, RDNA3.5) need a system ROCm 7: AMD's wheels hold one "
        "family"
    ]


def test_hip_ordinal_is_read_and_never_overridden(env, tmp_path):
    """ "HIP_VISIBLE_DEVICES, a "gpu" in the settings file or hip_ordinal is never
    overridden": the server JSON's hip_ordinal names the 780M, not the discrete card the
    automatic choice would take."""
    root = write_sysfs(tmp_path / "sys", [RADEON_780M, R9700])
    config = tmp_path / "strata-hip.json"
    config.write_text(json.dumps({"exe": "build-hip/strata", "hip_ordinal": 0}))
    chosen = ("--sysfs", str(root), "--config", str(config))
    answer = json.loads(plan(*chosen, env=env).stdout)
    assert (answer["device"]["index"], answer["device"]["gfx"]) == (0, "gfx1103")
    devices = json.loads(strata_core("devices", "--json", *chosen, env=env).stdout)
    assert devices["selected"] == [0]
    assert devices["selection_reason"] == f"hip_ordinal from {config}"
    config.write_text(json.dumps({"gpu": 1, "hip_ordinal": 0}))
    refused = strata_core("plan", *chosen, env=env, check=False)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"strata-core: error: {config}:1: hip_ordinal: 0, but gpu is 1: neither is overridden, "
        "so the config must name one card\n"
    )


def test_the_780m_follows_strata_experimental_gfx1103(env, tmp_path):
    """ "Setup installs for gfx1103 only with STRATA_EXPERIMENTAL_GFX1103=1"."""
    root = write_sysfs(tmp_path, [RADEON_780M])
    here = ("--sysfs", str(root))
    without = json.loads(plan(*here, env=env).stdout)
    assert without["device"]["status"] == "opt-in build"
    assert without["package"] is None
    assert without["warnings"][-1].endswith(
        "; setup installs for gfx1103 only with STRATA_EXPERIMENTAL_GFX1103=1"
    )
    opted = env | {"STRATA_EXPERIMENTAL_GFX1103": "1"}
    answer = json.loads(plan(*here, env=opted).stdout)
    assert answer["device"]["status"] == "opt-in build, opted in (STRATA_EXPERIMENTAL_GFX1103=1)"
    assert (
        "STRATA_EXPERIMENTAL_GFX1103=1: setup builds the engine for Radeon 780M Graphics "
        "(gfx1103) from source (opt-in build: Linux only: RADEON_780M.md)"
    ) in answer["log"]
    assert not any("STRATA_EXPERIMENTAL_GFX1103" in w for w in answer["warnings"])
    devices = json.loads(strata_core("devices", "--json", *here, env=opted).stdout)
    assert devices["devices"][0]["status"] == answer["device"]["status"]


@pytest.mark.parametrize(
    "variable",
    ["STRATA_TUNING_DIR", "STRATA_HIPBLASLT_LIBRARY", "STRATA_ROCBLAS_LIBRARY",
     "STRATA_HIP_CLANG", "STRATA_EXPERIMENTAL_GFX1103", "STRATA_ROCM_VERSION"],
)  # fmt: skip
def test_the_documented_variables_are_no_unknown_switches(env, tmp_path, variable):
    answer = json.loads(plan("--device", "gfx1201", env=env | {variable: str(tmp_path)}).stdout)
    assert not any(variable in w for w in answer["warnings"])


@pytest.mark.parametrize(
    ("gfx", "vram_gib", "reader"),
    [("gfx1201", 32, "gpu"), ("gfx1201", 16, "cpu"), ("gfx1100", 24, "gpu"),
     ("gfx1100", 20, "cpu")],
)  # fmt: skip
def test_the_picture_reader_follows_the_main_cards_vram(env, tmp_path, gfx, vram_gib, reader):
    """ "CPU reader under 24 GB of VRAM, GPU reader from 24 GB ... If the GPU reader cannot
    start, the CPU reader is used."""
    root = write_sysfs(tmp_path, [fake_gpu(gfx, vram_gib=vram_gib)])
    pictures = json.loads(plan("--sysfs", str(root), env=env).stdout)["pictures"]
    assert pictures["reader"] == reader
    assert pictures["reason"].startswith(
        f"{vram_gib:.1f} GiB of VRAM: CPU reader under 24 GB (22.4 GiB), GPU reader from 24 GB"
    )  # the card's VRAM in GiB, as `devices` says it
    rdna3 = (
        "the GPU reader has not run on an RDNA3 card (gfx1100-gfx1102) or on Windows with an "
        "AMD card"
    )
    assert (rdna3 in pictures["notes"]) == (reader == "gpu" and gfx == "gfx1100")
    if reader == "gpu":
        assert pictures["reason"].endswith(
            "; if the GPU reader cannot start, the CPU reader is used"
        )
        assert pictures["notes"][0] == (
            "the card's reader (strata-vision-hip) keeps about 1.4 GiB of VRAM on the R9700"
        )


def test_vision_given_by_the_user_is_never_overridden(env, tmp_path):
    root = write_sysfs(tmp_path, [R9700])
    answer = json.loads(plan("--sysfs", str(root), "--vision", "cpu", env=env).stdout)
    assert answer["pictures"] == {"reader": "cpu", "reason": "--vision cpu", "notes": []}
    text = strata_core("plan", "--sysfs", str(root), "--vision", "cpu", env=env).stdout
    assert "pictures: the CPU reader (--vision cpu)" in text.splitlines()


def test_gfx906_says_pictures_were_not_done(env):
    """gfx906: "Not done on gfx906: ... images (--vision)"."""
    pictures = json.loads(plan("--device", "gfx906", env=env).stdout)["pictures"]
    assert pictures["reason"] == "pictures (--vision) were not done on gfx906 (AMD_HIP.md, gfx906)"


def test_device_takes_a_target_that_an_installed_plugin_claims(env, tmp_path):
    """--device names a target the core's database lacks when a plugin says it runs it."""
    site = write_distribution(
        tmp_path / "site",
        "strata-gfx1036",
        "1.0",
        {"raphael": "raphael_plugin:plugin"},
        {
            "raphael_plugin.py": """
            from strata_core.api.arch_plugin import ArchPlugin

            class Raphael(ArchPlugin):
                strata_api_version = 1
                targets = ("gfx1036",)

            plugin = Raphael()
            """
        },
    )
    with_plugin = env | {"PYTHONPATH": str(site)}
    answer = json.loads(plan("--device", "gfx1036", env=with_plugin).stdout)
    assert (answer["device"]["gfx"], answer["plugin"]) == ("gfx1036", "raphael")
    refused = strata_core("plan", "--device", "gfx1036", env=env, check=False)
    assert refused.returncode == 2
    assert refused.stderr.startswith(
        "strata-core: error: --device gfx1036: not a target strata knows ("
    )
    assert refused.stderr.endswith(") nor one an installed plugin claims\n")


def test_pack_names_in_any_case(env):
    lower = json.loads(plan("--device", "gfx1201", "--pack", "iq3_s", env=env).stdout)
    upper = json.loads(plan("--device", "gfx1201", "--pack", "IQ3_S", env=env).stdout)
    assert lower["switches"] == upper["switches"]
    assert lower["switches"]["STRATA_PF_FUSED"]["value"] == "1"


def test_explain_topk_stream_in_the_pages_words(env):
    out = strata_core("plan", "--device", "gfx1201", "--explain", "STRATA_TOPK_STREAM", env=env)
    assert (
        "  meaning: =0 runs the register kernel in the 90K-135K band, where a prompt read runs "
        "the wide one from about 90K cells"
    ) in out.stdout.splitlines()


# The page's STRATA_ names as this project wrote them down, each with its section, reader and
# meaning (checked against the page by hand; the file says when and how to check again): every
# variable the page names is known to strata, from one table (core_switches), in the section
# and with the reader the file gives, and nothing else is.
PAGE_NAMES = tomllib.loads(
    (Path(__file__).parent / "fixtures/page_variables.toml").read_text(encoding="utf-8")
)


def page_rows(kind: str) -> dict[str, tuple[str, dict[str, str]]]:
    """name -> (its section, its row) of the file's [variables] or [not_variables]."""
    return {name: (s, row) for s, rows in PAGE_NAMES[kind].items() for name, row in rows.items()}


def test_the_known_variables_are_the_pages():
    variables, headers = page_rows("variables"), page_rows("not_variables")
    assert set(variables) == set(page_variables())
    assert set(headers) <= {k.magic for k in KINDS.values()}  # a table's header word
    assert set(variables).isdisjoint(headers)
    assert [n for n in (*variables, *headers) if not re.fullmatch(r"STRATA_[A-Z0-9_]+", n)] == []


def test_each_variable_is_named_in_the_section_its_row_gives():
    written = {n: (section, row["reader"]) for n, (section, row) in page_rows("variables").items()}
    assert page_variables() == written


def test_the_page_variables_file_names_only_the_pages_sections():
    """Each name's section is one the file lists; each listed name begins the page's heading
    it gives (or a paragraph's run-in title, under a heading the file lists too); each row a
    reader and a meaning of one line."""
    sections = PAGE_NAMES["sections"]
    headings = {line for line in sections.values() if " > " not in line}
    for name, line in sections.items():
        *heading, title = line.split(" > ")
        assert title.startswith(name) and set(heading) <= headings, name
    rows = {**page_rows("variables"), **page_rows("not_variables")}
    assert {s for s, _ in rows.values()} <= set(sections)
    readers = {ENGINE, GFX906_BUILD, SETUP, CMAKE, SOURCE}
    assert [n for n, (_, row) in rows.items() if set(row) != {"reader", "meaning"}] == []
    assert [n for n, (_, row) in rows.items() if row["reader"] not in readers] == []
    assert [n for n, (_, r) in rows.items() if not r["meaning"] or "\n" in r["meaning"]] == []


ENGINE_ONLY = (
    "STRATA_COLD_TRACE", "STRATA_SCORES_THREAD_TRACE", "STRATA_DECODE_TIMING",
    "STRATA_GDN_REC_HEADS", "STRATA_ARENA_PIN_GIB", "STRATA_PREFILL_CPU_SHARE",
    "STRATA_PIPED_CONCURRENT", "STRATA_PREFILL_STREAM_MIN", "STRATA_IO_THREADS",
)  # fmt: skip


@pytest.mark.parametrize("gfx", ["gfx1201", "gfx1030", "gfx906", "gfx1103"])
def test_every_documented_variable_is_known_to_the_plan_whatever_the_card(env, gfx):
    given = dict.fromkeys(ENGINE_ONLY, "1") | {"STRATA_CUBLASLT_LIBRARY": "/no/libcublasLt.so"}
    answer = json.loads(plan("--device", gfx, env=env | given).stdout)
    assert not [w for w in answer["warnings"] if "strata knows" in w or "STRATA_CUBLAS" in w]
    assert all(answer["engine_env"].get(name) is None for name in given)  # the engine sees them


def test_a_build_option_in_the_environment_is_said_to_be_one(env):
    answer = json.loads(plan("--device", "gfx1201", env=env | {"STRATA_ENABLE_HIP": "ON"}).stdout)
    assert (
        "STRATA_ENABLE_HIP (set in the environment) is a CMake option of the engine's build "
        "(AMD_HIP.md, Build), not read when it runs"
    ) in answer["warnings"]


def test_the_780m_is_not_supported_on_windows(env):
    """ "Phoenix / Hawk Point (780M / 760M) is not supported on Windows; on Linux it has an
    opt-in build"."""
    on = {os: json.loads(strata_core("plan", "--json", "--os", os, "--device", "gfx1103",
                                     "--integrated", env=env).stdout)["device"]["status"]
          for os in ("linux", "windows")}  # fmt: skip
    assert on == {"linux": "opt-in build", "windows": "not supported on Windows"}


def test_a_split_takes_only_a_package_that_covers_every_chosen_card(env, tmp_path):
    """ "pick the package whose GPU code covers the card ... A package whose GPU code does not
    cover the card is refused with one line that names the card family": Windows rx9070 has
    no gfx1100 code, rdna3 no gfx1201."""
    root = write_sysfs(tmp_path / "sys", [RX_7900_XTX, R9700])
    answer = json.loads(
        strata_core("plan", "--json", "--os", "windows", "--sysfs", str(root), "--gpus", "all",
                    env=env).stdout
    )  # fmt: skip
    assert len(answer["selected"]) == 2 and answer["package"] is None
    assert (
        "no ready-made Windows engine package carries GPU code for every chosen card: rdna3 "
        "has none for the RDNA4 card Radeon AI PRO R9700 (gfx1201); "
        "build the engine from source"
    ) in answer["warnings"]
    one = json.loads(strata_core("plan", "--json", "--os", "windows", "--sysfs", str(root),
                                 env=env).stdout)  # fmt: skip
    assert (one["selected"], one["package"]) == ([1], "rx9070")  # the R9700 alone


def test_gpus_all_is_every_supported_card_and_no_integrated_one(env, tmp_path):
    """ "--gpus all  Every supported card, most VRAM first"; "Integrated Radeon GPUs are listed
    as not supported"."""
    root = write_sysfs(tmp_path / "sys", [RADEON_780M, R9700])
    answer = json.loads(
        strata_core("devices", "--json", "--sysfs", str(root), "--gpus", "all", env=env).stdout
    )
    assert [d["gfx"] for d in answer["devices"] if d["selected"]] == ["gfx1201"]


WAVE64 = (
    "gfx906 is wave64 and has no WMMA and no packed byte arithmetic, so the wave32 backend "
    "refuses it"
)


def test_a_gfx906_card_without_its_plugin_is_refused_in_the_pages_words(env, tmp_path):
    """ "gfx906 is wave64 and has no WMMA and no packed byte arithmetic, so the wave32 backend
    refuses it": with the gfx906 plugin off, the refusal says why the wave32 plugins cannot
    run the card, in `devices`, in `plan`'s note, and where the card is chosen."""
    root = write_sysfs(tmp_path / "sys", [MI50])
    off = env | {"STRATA_DISABLE_PLUGINS": "gfx906"}
    (card,) = json.loads(
        strata_core("devices", "--json", "--sysfs", str(root), env=off).stdout
    )["devices"]
    assert card["reason"] == (
        "no installed plugin runs gfx906 (GCN5 (Vega20)): gfx906 is disabled: named in "
        f"STRATA_DISABLE_PLUGINS; {WAVE64} (AMD_HIP.md, gfx906)"
    )
    noted = strata_core("plan", "--sysfs", str(root), env=off).stderr.splitlines()
    assert f"strata-core: HIP 0 (gfx906) passed over: {card['reason']}" in noted
    chosen = strata_core("plan", "--sysfs", str(root), "--gpu", "0", env=off, check=False)
    assert chosen.returncode == 2 and WAVE64 in chosen.stderr


def test_a_card_the_installed_build_lacks_is_refused_with_the_builds_list(env, tmp_path):
    """ "A binary carried to another card stops with the card's name, its architecture and the
    build's list": an install of the gfx110x plugin alone refuses the R9700 helper of a split
    naming the card, gfx1201 and the targets the build carries, and so does a plan for the
    card named with --device."""
    root = write_sysfs(tmp_path / "sys", [RX_7900_XTX, R9700])
    rdna3 = env | {"STRATA_PLUGINS": "hip_rdna3"}
    for command in ("plan", "run"):
        result = strata_core(
            command, "--sysfs", str(root), "--gpus", "1,0", env=rdna3, check=False
        )
        assert result.returncode == 2 and result.stderr.count("\n") == 1
        assert result.stderr == (
            "strata-core: error: --gpus from command line: HIP 1 is an RDNA4 card (gfx1201, "
            "RDNA4), which no installed plugin runs gfx1201 "
            "(RDNA4): hip_rdna4 is not allowed: not named in STRATA_PLUGINS; the installed "
            "builds carry gfx1100, gfx1101, gfx1102, not gfx1201; every chosen card must be "
            "one of the supported architectures\n"
        )
    named = strata_core("plan", "--device", "gfx1201", env=rdna3, check=False)
    assert named.returncode == 2 and named.stderr == (
        "strata-core: error: RX 9070 / RX 9070 XT / Radeon AI PRO R9700 (gfx1201, RDNA4): no "
        "installed plugin runs gfx1201 (RDNA4): hip_rdna4 is not allowed: not named in "
        "STRATA_PLUGINS; the installed builds carry gfx1100, gfx1101, gfx1102, not gfx1201\n"
    )


def test_strix_halo_s_row_points_to_its_own_page(env):
    """ "Ryzen AI Max (Strix Halo)  gfx1151  STRIX_HALO.md": the status column of its row is its
    own page, not another card's status."""
    answer = json.loads(strata_core("plan", "--json", "--device", "gfx1151", env=env).stdout)
    assert answer["device"]["status"] == "on its own page, STRIX_HALO.md"


def test_a_split_of_a_wave64_and_a_wave32_card_is_refused(env, tmp_path):
    """gfx906: "the wave32 backend refuses it", and "A wave32 card seen by this build is
    refused at start": no build runs an MI50 and an R9700 together, in either order."""
    root = write_sysfs(tmp_path, [MI50, R9700])
    for command, order in (("plan", "0,1"), ("plan", "1,0"), ("run", "1,0")):
        result = strata_core(command, "--sysfs", str(root), "--gpus", order, env=env, check=False)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert result.stderr == (
            "strata-core: error: --gpus from command line: HIP 0 (gfx906) is wave64 and HIP 1 "
            "(gfx1201) wave32, and no build of the engine runs both: the wave32 backend "
            'refuses gfx906, and "a wave32 card seen by this build is refused at start" '
            "(AMD_HIP.md, gfx906)\n"
        )
    alone = strata_core("plan", "--sysfs", str(root), "--gpu", "0", env=env)
    assert alone.returncode == 0  # either card alone is planned
