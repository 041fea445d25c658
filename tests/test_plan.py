"""Switch defaults and their resolution: one test per rule row, per architecture and OS,
per user override, for the iGPU prompt set and for config precedence."""

import os

import attrs
import pytest

from strata_core.api.arch import Architectures
from strata_core.api.manager import PluginManager
from strata_core.api.records import RunContext
from strata_core.detect.visibility import is_runtime_variable
from strata_core.plan.claims import assign
from strata_core.plan.packages import package_for
from strata_core.plan.pipeline import named_device
from strata_core.plan.plan import resolve_card
from strata_core.plan.resolve import parse_engine_args, without_flags
from strata_core.testing import device_for

GIB = 1 << 30
IGPU_SET = (
    "STRATA_HIP_WMMA",
    "STRATA_PF_GEMM",
    "STRATA_PA_FAST",
    "STRATA_SELECT_WMMA",
    "STRATA_HC_UPMIX",
)


@pytest.fixture(scope="module")
def manager():
    env = {
        k: v
        for k, v in os.environ.items()
        if not is_runtime_variable(k) and not k.startswith("STRATA_")
    }
    return PluginManager.discover(env)


@pytest.fixture
def plan(manager):
    def make(gfx, integrated=False, user=None, config=None, args=(), device=None, **context):
        archs = Architectures(manager.arch_records())
        device = device or named_device(gfx, integrated, archs, manager)
        (assignment,), _ = assign(manager, [device])
        return resolve_card(
            manager,
            device,
            assignment.plugin,
            RunContext(**context),
            user or {},
            config or {},
            tuple(args),
            "strata.toml",
        ).as_plan()

    return make


def value(plan, name):
    resolved = plan.explain(name)
    return resolved.value, resolved.source


# gfx, context, switch, expected value (None: unset, the engine's built-in behaviour)
RULE_ROWS = [
    # STRATA_HIP_WMMA: gfx12 Linux on with int8 KV; Windows and gfx11 opt-in.
    ("gfx1201", dict(os="linux", kv="int8"), "STRATA_HIP_WMMA", "1"),
    ("gfx1200", dict(os="linux", kv="int8"), "STRATA_HIP_WMMA", "1"),
    ("gfx1201", dict(os="linux", kv="f16"), "STRATA_HIP_WMMA", None),
    ("gfx1201", dict(os="windows", kv="int8"), "STRATA_HIP_WMMA", None),
    ("gfx1100", dict(os="linux", kv="int8"), "STRATA_HIP_WMMA", None),
    # STRATA_PF_FUSED: gfx12 Linux on for IQ3_S, IQ3_XXS, Q2_0; IQ2 formats and Windows opt-in.
    ("gfx1201", dict(os="linux", pack="IQ3_S"), "STRATA_PF_FUSED", "1"),
    ("gfx1201", dict(os="linux", pack="IQ3_XXS"), "STRATA_PF_FUSED", "1"),
    ("gfx1200", dict(os="linux", pack="Q2_0"), "STRATA_PF_FUSED", "1"),
    ("gfx1201", dict(os="linux", pack="IQ2_XS"), "STRATA_PF_FUSED", None),
    ("gfx1201", dict(os="linux", pack="IQ2_S"), "STRATA_PF_FUSED", None),
    ("gfx1201", dict(os="windows", pack="IQ3_S"), "STRATA_PF_FUSED", None),
    ("gfx1100", dict(os="linux", pack="IQ3_S"), "STRATA_PF_FUSED", None),
    # STRATA_SCORES_THREAD: gfx12 on, gfx1100 opt-in.
    ("gfx1201", dict(os="linux"), "STRATA_SCORES_THREAD", "1"),
    ("gfx1200", dict(os="windows"), "STRATA_SCORES_THREAD", "1"),
    ("gfx1100", dict(os="linux"), "STRATA_SCORES_THREAD", None),
    # STRATA_HC_Q8: gfx12 and gfx1151 on.
    ("gfx1201", dict(os="linux"), "STRATA_HC_Q8", "1"),
    ("gfx1151", dict(os="linux"), "STRATA_HC_Q8", "1"),
    ("gfx1151", dict(os="windows"), "STRATA_HC_Q8", "1"),
    ("gfx1100", dict(os="linux"), "STRATA_HC_Q8", None),
    ("gfx1103", dict(os="linux"), "STRATA_HC_Q8", None),
    # STRATA_HIP_QUEUE_PRIME: gfx1200/gfx1201 Linux on.
    ("gfx1200", dict(os="linux"), "STRATA_HIP_QUEUE_PRIME", "1"),
    ("gfx1201", dict(os="windows"), "STRATA_HIP_QUEUE_PRIME", None),
    ("gfx1100", dict(os="linux"), "STRATA_HIP_QUEUE_PRIME", None),
    # STRATA_SH_STREAM: off on HIP except gfx1151 (kept off on Windows with KV streaming).
    ("gfx1151", dict(os="linux"), "STRATA_SH_STREAM", "1"),
    ("gfx1151", dict(os="windows"), "STRATA_SH_STREAM", "1"),
    ("gfx1151", dict(os="windows", kv_streaming=True), "STRATA_SH_STREAM", "0"),
    ("gfx1030", dict(os="linux"), "STRATA_SH_STREAM", None),
    ("gfx1201", dict(os="linux"), "STRATA_SH_STREAM", None),
    # STRATA_MTP_SIDE_STREAM: on for gfx103x.
    ("gfx1030", dict(os="linux"), "STRATA_MTP_SIDE_STREAM", "1"),
    ("gfx1031", dict(os="windows"), "STRATA_MTP_SIDE_STREAM", "1"),
    ("gfx1100", dict(os="linux"), "STRATA_MTP_SIDE_STREAM", None),
    # STRATA_HIPBLASLT_TABLE: default on only on gfx1151.
    ("gfx1151", dict(os="linux"), "STRATA_HIPBLASLT_TABLE", "on"),
    ("gfx1100", dict(os="linux"), "STRATA_HIPBLASLT_TABLE", None),
    ("gfx1201", dict(os="windows"), "STRATA_HIPBLASLT_TABLE", None),
    # STRATA_FILE_CACHE_OLD_RULE kept on gfx906; --pipeline-windows off on gfx906.
    ("gfx906", dict(os="linux"), "STRATA_FILE_CACHE_OLD_RULE", "1"),
    ("gfx1030", dict(os="linux"), "STRATA_FILE_CACHE_OLD_RULE", None),
    ("gfx906", dict(os="linux"), "--pipeline-windows", "0"),
    ("gfx1100", dict(os="linux"), "--pipeline-windows", None),
    # --pcie-frac 0.15 on gfx12 native packs.
    ("gfx1201", dict(os="linux", pack="IQ3_XXS"), "--pcie-frac", "0.15"),
    ("gfx1200", dict(os="windows", pack="UD-IQ4_XS"), "--pcie-frac", "0.15"),
    ("gfx1201", dict(os="linux", pack="Q8_0"), "--pcie-frac", None),
    ("gfx1201", dict(os="linux"), "--pcie-frac", None),
    ("gfx1100", dict(os="linux", pack="IQ3_XXS"), "--pcie-frac", None),
    # Opt-in everywhere: never a default.
    ("gfx1100", dict(os="linux"), "STRATA_GDN_CHUNKED", None),
    ("gfx1100", dict(os="linux"), "STRATA_PF_GEMM", None),
    ("gfx1030", dict(os="linux"), "STRATA_HIP_PROMPT_F16", None),
    ("gfx1201", dict(os="linux"), "STRATA_DENSE_MMQ", None),
    ("gfx1201", dict(os="linux"), "STRATA_WDDM_BUDGET", None),
]


@pytest.mark.parametrize(("gfx", "context", "switch", "expected"), RULE_ROWS)
def test_rule_row(plan, gfx, context, switch, expected):
    got, source = value(plan(gfx, **context), switch)
    assert got == expected
    assert source == ("builtin" if expected is None else "arch-default")


def test_defaults_say_why_with_the_reference_section(plan):
    resolved = plan("gfx1201", os="linux", kv="int8").explain("STRATA_HIP_WMMA")
    assert resolved.reason == "gfx12 Linux: on with int8 KV (AMD_HIP.md, Speed switches)"


def test_pcie_frac_old_default_and_explicit_value(plan):
    old = plan("gfx1201", pack="IQ3_S", user={"STRATA_PCIE_FRAC_DEFAULT": "old"})
    assert value(old, "--pcie-frac") == ("0.55", "arch-default")
    explicit = plan(
        "gfx1201",
        pack="IQ3_S",
        args=["--kv", "int8", "--pcie-frac", "0.3"],
        user={"STRATA_PCIE_FRAC_DEFAULT": "old"},
    )
    assert value(explicit, "--pcie-frac") == ("0.3", "config")
    assert value(plan("gfx1201", pack="IQ3_S", args=["--pcie-frac=0.4"]), "--pcie-frac") == (
        "0.4",
        "config",
    )


@pytest.mark.parametrize(
    ("ram", "table", "expected"),
    [
        (64 * GIB, int(26.8 * GIB), "1"),
        (32 * GIB, int(26.8 * GIB), "0"),
        (64 * GIB, None, None),
        (None, int(26.8 * GIB), None),
    ],
)
def test_ple_auto_ram(plan, ram, table, expected):
    assert (
        value(plan("gfx1201", ram_bytes=ram, ple_table_bytes=table), "STRATA_PLE_AUTO_RAM")[0]
        == expected
    )


def test_ple_auto_ram_leaves_an_explicit_ple_io_alone(plan):
    p = plan("gfx1201", ram_bytes=64 * GIB, ple_table_bytes=20 * GIB, args=["--ple-io", "mmap"])
    assert value(p, "STRATA_PLE_AUTO_RAM") == (None, "builtin")
    assert value(p, "--ple-io") == ("mmap", "config")


@pytest.mark.parametrize(
    ("gfx", "switch"),
    [
        ("gfx1201", "STRATA_HIP_WMMA"),
        ("gfx1030", "STRATA_MTP_SIDE_STREAM"),
        ("gfx1151", "STRATA_HC_Q8"),
        ("gfx906", "STRATA_FILE_CACHE_OLD_RULE"),
        ("gfx1201", "STRATA_DENSE_MMQ"),
    ],
)
@pytest.mark.parametrize("given", ["0", "1", "garbage"])
def test_a_user_value_is_never_overridden(plan, gfx, switch, given):
    p = plan(gfx, os="linux", kv="int8", user={switch: given})
    assert value(p, switch) == (given, "user")
    invalid = [w for w in p.warnings if w.startswith(f"{switch}={given}")]
    if given == "garbage":
        assert invalid == [
            f"{switch}=garbage (set in the environment): expected one of 0, 1"
            f"{', auto' if switch == 'STRATA_HIP_WMMA' else ''}; kept as given"
        ]
    else:
        assert invalid == []


def test_config_precedence(plan):
    p = plan(
        "gfx1201",
        os="linux",
        kv="int8",
        config={"STRATA_HIP_WMMA": "auto", "STRATA_HC_Q8": "0", "HSA_USERPTR_FOR_PAGED_MEM": "0"},
        user={"STRATA_HC_Q8": "1"},
    )
    assert value(p, "STRATA_HIP_WMMA") == ("auto", "config")
    assert p.explain("STRATA_HIP_WMMA").reason == "set in strata.toml"
    assert value(p, "STRATA_HC_Q8") == ("1", "user")
    assert value(p, "STRATA_SCORES_THREAD") == ("1", "arch-default")
    assert p.extra_env == {"HSA_USERPTR_FOR_PAGED_MEM": "0"}
    assert p.engine_env() == {
        "STRATA_HIP_WMMA": "auto",
        "STRATA_SCORES_THREAD": "1",
        "STRATA_HIP_QUEUE_PRIME": "1",
        "HSA_USERPTR_FOR_PAGED_MEM": "0",
    }


def test_gfx906_switches_exist_only_in_its_build(plan):
    gfx906 = plan("gfx906")
    assert value(gfx906, "STRATA_MMVQ_WAVE") == (None, "builtin")
    assert gfx906.explain("STRATA_MMVQ_WAVE").reason == "unset; engine built-in: on"
    rdna4 = plan("gfx1201", user={"STRATA_GR_SPLIT": "1"})
    with pytest.raises(KeyError):
        rdna4.explain("STRATA_GR_SPLIT")
    assert (
        "STRATA_GR_SPLIT (set in the environment) is read only by the gfx906 build; "
        "hip_rdna4 does not read it"
    ) in rdna4.warnings


def test_unknown_strata_variables_are_warned_about(plan):
    p = plan(
        "gfx1100",
        user={"STRATA_HIP_WMAM": "1", "STRATA_SYSFS": "/sys"},
        config={"STRATA_TYPO": "1"},
    )
    assert "STRATA_HIP_WMAM (set in the environment) is no switch that strata knows" in p.warnings
    assert "STRATA_TYPO (set in strata.toml) is no switch that strata knows" in p.warnings
    assert not any("STRATA_SYSFS" in w for w in p.warnings)


@pytest.mark.parametrize(
    ("gfx", "switch"),
    [
        ("gfx1201", "STRATA_PF_GEMM"),
        ("gfx1201", "STRATA_PF_PAD"),
        ("gfx1100", "STRATA_HC_PERSIST"),
        ("gfx1201", "STRATA_HC_PERSIST"),
    ],
)
def test_a_switch_set_where_it_does_not_apply_is_warned_about_and_kept(plan, gfx, switch):
    p = plan(gfx, user={switch: "1"})
    assert value(p, switch) == ("1", "user")
    assert any(
        w.startswith(f"{switch}=1 (set in the environment) applies to ")
        and w.endswith(f"{gfx} on linux does not read it")
        for w in p.warnings
    )


def test_hc_persist_on_gfx103x_is_quiet(plan):
    assert not any(
        "STRATA_HC_PERSIST" in w for w in plan("gfx1030", user={"STRATA_HC_PERSIST": "1"}).warnings
    )


def test_sh_stream_by_hand_on_windows_with_kv_streaming_warns_and_keeps_it(plan):
    p = plan("gfx1030", os="windows", kv_streaming=True, user={"STRATA_SH_STREAM": "1"})
    assert value(p, "STRATA_SH_STREAM") == ("1", "user")
    assert any(w.startswith("STRATA_SH_STREAM=1 with KV streaming on Windows") for w in p.warnings)
    assert not any(
        "SH_STREAM" in w
        for w in plan(
            "gfx1030", os="linux", kv_streaming=True, user={"STRATA_SH_STREAM": "1"}
        ).warnings
    )


def test_rdna2_prints_the_prompt_f16_tip_until_it_is_set(plan):
    assert plan("gfx1030").log[0].startswith("tip: STRATA_HIP_PROMPT_F16=1")
    assert plan("gfx1030", user={"STRATA_HIP_PROMPT_F16": "0"}).log == ()


# The iGPU prompt set.


def igpu_set(p):
    return {n: p.explain(n).value for n in IGPU_SET if p.explain(n).source == "igpu-set"}


def test_igpu_set_is_the_default_on_the_780m_on_linux(plan):
    p = plan("gfx1103", os="linux", kv="int8")
    assert igpu_set(p) == dict.fromkeys(IGPU_SET, "1")
    assert p.log == (
        "iGPU prompt set: STRATA_HIP_WMMA=1 STRATA_PF_GEMM=1 STRATA_PA_FAST=1 "
        "STRATA_SELECT_WMMA=1 STRATA_HC_UPMIX=1 (Radeon 780M / Radeon 760M, "
        "gfx1103, default on gfx1103 on Linux)",
    )


@pytest.mark.parametrize(
    ("gfx", "os_name"),
    [("gfx1103", "windows"), ("gfx1150", "linux"), ("gfx1151", "linux"), ("gfx1152", "linux")],
)
def test_igpu_set_is_opt_in_elsewhere(plan, gfx, os_name):
    assert igpu_set(plan(gfx, os=os_name)) == {}
    opted = plan(gfx, os=os_name, user={"STRATA_IGPU_PROMPT_SET": "1"})
    assert igpu_set(opted) == dict.fromkeys(IGPU_SET, "1")
    assert opted.log[-1].endswith(f"{gfx}, STRATA_IGPU_PROMPT_SET=1)")


def test_igpu_set_opt_in_through_the_run_config(plan):
    assert igpu_set(plan("gfx1150", config={"STRATA_IGPU_PROMPT_SET": "1"})) == dict.fromkeys(
        IGPU_SET, "1"
    )


@pytest.mark.parametrize(
    "given",
    [
        {"STRATA_IGPU_PROMPT_SET": "0"},
        {"STRATA_IGPU_DEFAULTS": "0"},
        {"STRATA_IGPU_DEFAULTS": "0", "STRATA_IGPU_PROMPT_SET": "1"},
    ],
)
def test_igpu_set_turned_off(plan, given):
    p = plan("gfx1103", os="linux", user=given)
    assert igpu_set(p) == {} and p.log == ()


def test_each_switch_keeps_zero_as_its_off(plan):
    p = plan("gfx1103", os="linux", kv="int8", user={"STRATA_PF_GEMM": "0"})
    assert value(p, "STRATA_PF_GEMM") == ("0", "user")
    assert set(igpu_set(p)) == set(IGPU_SET) - {"STRATA_PF_GEMM"}
    assert "STRATA_PF_GEMM" not in p.log[0]


def test_igpu_set_never_on_a_discrete_card_nor_beside_one(plan):
    discrete = attrs.evolve(device_for("gfx1103"), integrated=False)
    assert igpu_set(plan("gfx1103", device=discrete, user={"STRATA_IGPU_PROMPT_SET": "1"})) == {}
    beside = plan("gfx1103", os="linux", other_cards=(device_for("gfx1100"),))
    assert igpu_set(beside) == {} and beside.log == ()
    two_igpus = plan("gfx1103", os="linux", other_cards=(device_for("gfx1150", integrated=True),))
    assert igpu_set(two_igpus) == dict.fromkeys(IGPU_SET, "1")


def test_igpu_set_warns_that_wmma_needs_int8_kv(plan):
    assert (
        "STRATA_HIP_WMMA of the iGPU prompt set needs --kv int8, not f16"
        in plan("gfx1103", os="linux", kv="f16").warnings
    )


# Packages and refusals.


@pytest.mark.parametrize(
    ("gfx", "os_name", "package"),
    [
        ("gfx1201", "linux", "rx9070"),
        ("gfx1200", "windows", "rx9070"),
        ("gfx1100", "linux", "rx7900"),
        ("gfx1102", "linux", "rx7900"),
        ("gfx1101", "windows", "rdna3"),
        ("gfx1151", "windows", "rdna3"),
        ("gfx1151", "linux", "halo"),
        ("gfx1030", "linux", "rx6000"),
        ("gfx1031", "windows", "rdna2"),
        ("gfx1103", "linux", None),
        ("gfx906", "linux", None),
        ("gfx1150", "linux", None),
    ],
)
def test_package_table(gfx, os_name, package):
    found = package_for(gfx, os_name)
    assert (found.name if found else None) == package


def test_no_package_is_one_line_naming_the_family(plan):
    p = plan("gfx906")
    assert p.package is None
    assert (
        "no ready-made Linux engine package carries GPU code for the GCN5 (Vega20) card "
        "Instinct MI50 / Instinct MI60 / Radeon VII (gfx906); build the engine from source "
        "(source build, community-tested: wave64 compat build)"
    ) in p.warnings


@pytest.mark.parametrize("gfx", ["gfx1150", "gfx1152"])
def test_named_but_not_supported_cards_say_so(plan, gfx):
    assert any(
        w.endswith(" setup does not install it") and "is named but not supported by setup" in w
        for w in plan(gfx).warnings
    )


ENGINE_ARGS = (
    "-m", "model.gguf", "--kv=int8", "--ple-io", "mmap", "--threads", "8", "--kv-resident"
)  # fmt: skip


def test_engine_flags_are_read_and_dropped_in_both_spellings():
    """``--flag value`` and ``--flag=value`` alike: the value is read, and the flag is dropped
    with its value, the argument after ``--flag=value`` kept."""
    flags = {"--kv", "--ple-io"}
    assert parse_engine_args(ENGINE_ARGS, flags) == {"--kv": "int8", "--ple-io": "mmap"}
    kept = ("-m", "model.gguf", "--threads", "8", "--kv-resident")
    assert without_flags(ENGINE_ARGS, flags) == kept
