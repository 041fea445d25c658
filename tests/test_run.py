"""`strata-core run`: the host workload with every result checked, and starting the engine."""

import json
import re
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from cli_runner import strata_core

from strata_core.api.records import KernelChoice
from strata_core.errors import StrataError
from strata_core.host import reference
from strata_core.host.gemm import PromptGemm
from strata_core.host.library import HostLibrary
from strata_core.plan import profile
from strata_core.run import workload
from strata_core.testing.sysfs import R9700, write_sysfs
from strata_core.tuning.dispatch import TunedDispatch

TINY = Path(__file__).parent / "fixtures/profiles/tiny.toml"
run = partial(strata_core, "run")


def test_no_gpu_runs_the_host_workload_and_checks_every_result(env, tmp_path, host_isa):
    result = run(
        "--json",
        "--profile",
        str(TINY),
        "--sysfs",
        str(tmp_path),
        env=env | {"STRATA_HOST_ISA": host_isa},
    )
    assert result.stderr.splitlines()[0] == (
        "strata-core: no GPU to run on (no visible GPU that an installed plugin runs); the "
        "host backend runs"
    )
    answer = json.loads(result.stdout)
    assert answer["backend"] == "host" and answer["workload"] == "tiny"
    kernels = answer["kernels"]
    assert set(kernels) == {
        "matvec_q8_0",
        "router_topk",
        "expert_matvec_q8_0",
        "router_topk_batch",
        "expert_matvec_q8_0_batch",
        "router_topk_prompt",
        "topk",
        "topk_prompt",
        "prompt_gemm",
    }
    assert kernels["matvec_q8_0"]["calls"] == kernels["matvec_q8_0"]["checked"] == 3
    # tiny.toml's decode steps: one token, then a batch of 4, then one token
    assert kernels["expert_matvec_q8_0"]["calls"] == kernels["expert_matvec_q8_0"]["checked"] == 2
    assert kernels["expert_matvec_q8_0_batch"]["checked"] == 1
    assert kernels["router_topk_batch"]["throughput"] == pytest.approx(
        4 / (kernels["router_topk_batch"]["median_ms"] / 1e3), rel=1e-2
    )
    assert kernels["expert_matvec_q8_0"]["variant"] == host_isa
    assert kernels["topk"]["calls"] == kernels["topk"]["checked"] == 3
    assert kernels["topk_prompt"]["calls"] == kernels["topk_prompt"]["checked"] == 2
    assert kernels["prompt_gemm"]["checked"] == 2
    assert kernels["matvec_q8_0"]["variant"] == host_isa
    # the host's own bands: k 32 is below every instruction set's wide kernel
    assert kernels["topk"]["variant"] == "register"
    assert kernels["router_topk"]["variant"] == ("portable" if host_isa == "baseline" else "fast")
    assert all(k["median_ms"] > 0 and k["throughput"] > 0 for k in kernels.values())
    assert answer["read_bandwidth_gbs"] > 0
    # the prompt read selects among tiny.toml's 32 queries x 5000 cells in one call
    assert kernels["topk_prompt"]["throughput"] == pytest.approx(
        32 * 5000 / (kernels["topk_prompt"]["median_ms"] / 1e3), rel=1e-3
    )


@pytest.mark.parametrize("name", profile.SHIPPED)
def test_the_shipped_profiles_load_by_name(name):
    assert profile.load(profile.named(name)).name == name


def test_a_profile_is_taken_by_name_or_as_a_file(env, tmp_path):
    """`--profile deep-context` plans for its 524,288 cells; a name that is no shipped profile
    is a file, and a missing one is one line."""
    answer = json.loads(
        strata_core("plan", "--json", "--profile", "deep-context", "--sysfs", str(tmp_path),
                    env=env).stdout  # fmt: skip
    )
    assert answer["kernels"]["topk"]["reason"].startswith("524288 cells, k 256: ")
    missing = run("--profile", "huge-moe", "--sysfs", str(tmp_path), env=env, check=False)
    assert missing.returncode != 0
    assert missing.stderr.splitlines()[-1].startswith("strata-core: error: huge-moe: cannot read")


def test_human_report(env, tmp_path, host_isa):
    """One row a kernel under the headers where the table fits in the terminal (at most 100
    columns); else each kernel's name and variant above its figures. How wide the table is
    depends on the host's ISA name (avx2, avx512vnni), so the stacked one is asked for by a
    terminal no ISA's table fits in. Asserted with each ISA this CPU runs."""
    env = env | {"STRATA_HOST_ISA": host_isa}
    flat = tmp_path / "flat.toml"
    flat.write_text(TINY.read_text().replace("decode_batch_tokens = 4", "decode_batch_tokens = 1"))
    out = run("--profile", str(flat), "--sysfs", str(tmp_path), env=env).stdout
    assert out.splitlines()[0].startswith("host backend: libstrata_host.so, ")
    lines = out.splitlines()
    assert max(len(line) for line in lines[1:]) <= 100
    assert lines[1].split() == ["kernel", "variant", "checked", "median", "spread",
                                "throughput", "read", "(of", "DRAM's)"]  # fmt: skip
    matvec = lines[2].split()
    assert matvec[:3] == ["matvec_q8_0", matvec[1], "3/3"] and matvec[4] in ("us", "ms")
    assert re.fullmatch(r"\((\d+%|cached)\)", matvec[-1])
    assert not any(w.endswith("%)") and int(w[1:-2]) > 100 for line in lines for w in line.split())
    narrow = env | {"COLUMNS": "72"}
    tall = run("--profile", str(TINY), "--sysfs", str(tmp_path), env=narrow).stdout.splitlines()
    head = tall.index("  kernel (variant)")  # below the headline, wrapped to 72 columns
    assert tall[head + 1].split() == ["checked", "median", "spread", "throughput", "read", "(of",
                                      "DRAM's)"]  # fmt: skip
    assert tall[head + 2].startswith("  matvec_q8_0 (") and tall[head + 3].split()[0] == "3/3"
    assert "  expert_matvec_q8_0_batch (" in " ".join(tall)


def test_a_card_the_hip_runtime_does_not_see_runs_on_the_host(env, tmp_path):
    root = write_sysfs(tmp_path, [R9700])
    hip = env | {"STRATA_HIP_LIBRARY": "libamdhip64.so.5"}
    result = run("--json", "--profile", str(TINY), "--sysfs", str(root), env=hip)
    assert (
        "strata-core: the HIP runtime libamdhip64.so.5 reports no device; the host backend runs "
        "the workload"
    ) in result.stderr.splitlines()
    assert json.loads(result.stdout)["backend"] == "host"


def test_a_card_without_a_hip_runtime_runs_on_the_host(env, tmp_path):
    root = write_sysfs(tmp_path, [R9700])
    missing = env | {"STRATA_HIP_LIBRARY": str(tmp_path / "libamdhip64.so.7")}
    result = run("--json", "--profile", str(TINY), "--sysfs", str(root), env=missing)
    assert (
        f"strata-core: no HIP runtime found (tried {tmp_path / 'libamdhip64.so.7'}); the host "
        "backend runs "
        "the workload"
    ) in result.stderr.splitlines()
    assert json.loads(result.stdout)["backend"] == "host"


def test_the_old_router_switch_selects_the_portable_router(env, tmp_path):
    result = run(
        "--json",
        "--profile",
        str(TINY),
        "--sysfs",
        str(tmp_path),
        env=env | {"STRATA_HIP_ROUTER_OLD": "1"},
    )
    assert json.loads(result.stdout)["kernels"]["router_topk"]["variant"] == "portable"


def test_a_malformed_profile_is_one_line(env, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("hidden = 100\n")
    result = run("--profile", str(bad), "--sysfs", str(tmp_path), env=env, check=False)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        f"strata-core: error: {bad}: hidden must be a multiple of 32 (Q8_0 blocks)"
    )


def test_a_wrong_kernel_result_stops_the_run(monkeypatch):
    lib = HostLibrary()
    real = lib.topk
    monkeypatch.setattr(lib, "topk", lambda s, k, v: (real(s, k, v)[0][::-1].copy(), None))
    kernels = _host_choices()
    inputs = workload.make_inputs(profile.load(TINY))
    gemm = PromptGemm(inputs.w)
    results = workload.execute(
        lib, gemm, workload.wall_clock, inputs, kernels, TunedDispatch(None, "host BLAS")
    )
    with pytest.raises(StrataError, match="topk gave a wrong result in decode step 1"):
        workload.check(inputs, results, kernels, reference, gemm, "numpy", "the host library")


def _host_choices():
    return {
        op: KernelChoice(op, variant, "test")
        for op, variant in (
            ("matvec_q8_0", "avx2"),
            ("router_topk", "fast"),
            ("topk", "register"),
            ("topk_prompt", "wide"),
            ("prompt_gemm", "blas"),
        )
    }


def test_the_expert_step_takes_the_routers_ids_and_reports_the_experts_it_read():
    lib, kernels = HostLibrary(), _host_choices()
    inputs = workload.make_inputs(profile.load(TINY))
    gemm = PromptGemm(inputs.w)
    results = workload.execute(
        lib, gemm, workload.wall_clock, inputs, kernels, TunedDispatch(None, "host BLAS")
    )
    ops = [call.report for call in inputs.calls[:8]]
    assert ops == [
        "matvec_q8_0", "router_topk", "expert_matvec_q8_0", "topk",
        "matvec_q8_0", "router_topk_batch", "expert_matvec_q8_0_batch", "topk",
    ]  # fmt: skip
    batch_ids = results[5][0][0]
    assert results[6][0].shape == (4, 6, 128)
    reports = workload.check(inputs, results, kernels, reference, gemm, "numpy", "the host")
    expert_bytes = inputs.expert_qs[0].nbytes + inputs.expert_d[0].nbytes
    assert reports["expert_matvec_q8_0"].bytes_read == 6 * expert_bytes
    assert reports["expert_matvec_q8_0_batch"].bytes_read == (
        len(np.unique(batch_ids)) * expert_bytes
    )


def test_a_wrong_expert_result_stops_the_run(monkeypatch):
    lib, kernels = HostLibrary(), _host_choices()
    real = lib.expert_matvec_q8_0
    monkeypatch.setattr(
        lib, "expert_matvec_q8_0", lambda qs, d, ids, xq, xd: real(qs, d, ids[:, ::-1], xq, xd)
    )
    inputs = workload.make_inputs(profile.load(TINY))
    gemm = PromptGemm(inputs.w)
    results = workload.execute(
        lib, gemm, workload.wall_clock, inputs, kernels, TunedDispatch(None, "host BLAS")
    )
    wrong = "expert_matvec_q8_0 gave a wrong result in decode step 1"
    with pytest.raises(StrataError, match=wrong):
        workload.check(inputs, results, kernels, reference, gemm, "numpy", "the host library")


def test_the_large_moe_profile_is_the_issues_layer():
    """hidden 7168, 2048 rows an expert, 256 experts, k 8; decode steps of 1 and 64 tokens."""
    w = profile.load(profile.named("large-moe"))
    assert (w.hidden, w.ffn, w.experts, w.experts_per_token) == (7168, 2048, 256, 8)
    assert w.decode_batch_tokens == 64 and w.decode_steps >= 2


def test_the_shipped_profile_loads():
    shipped = profile.load()
    assert (shipped.name, shipped.experts, shipped.experts_per_token) == ("small-moe", 128, 8)
    assert np.float32(shipped.hidden) % 32 == 0


@pytest.mark.parametrize("where", ["environment", "run config"])
def test_verbose_set_anywhere_prints_the_tuned_dispatch_summary(env, tmp_path, where):
    config = tmp_path / "strata.toml"
    config.write_text('[env]\nSTRATA_HIPBLASLT_VERBOSE = "1"\n' if where == "run config" else "")
    extra = {"STRATA_HIPBLASLT_VERBOSE": "1"} if where == "environment" else {}
    result = run(
        "--profile", str(TINY), "--sysfs", str(tmp_path), "--config", str(config),
        env=env | extra,
    )  # fmt: skip
    lines = result.stderr.splitlines()
    assert "strata-core: host BLAS: 40 128 256 f32 prompt -> default" in lines
    assert lines[-1] == (
        "strata-core: host BLAS: tuned_launches=0 fallbacks=0 default_launches=2 disabled=0"
    )


def test_a_router_giving_ids_past_the_experts_stops_the_run_at_its_step(monkeypatch):
    """The expert steps are checked together, after the routers: a router whose ids name no
    expert is the run's first wrong result, and no reference is asked of its ids; an expert
    step before it that is wrong is named first."""
    lib, kernels = HostLibrary(), _host_choices()
    real, routed = lib.router_topk, []

    def router(logits, k, variant):
        routed.append(logits)
        ids, weights = real(logits, k, variant)
        return (ids + 10**6 if len(routed) == 2 else ids), weights

    monkeypatch.setattr(lib, "router_topk", router)
    experts = lib.expert_matvec_q8_0  # as a card might: the ids wrapped into its experts
    monkeypatch.setattr(
        lib, "expert_matvec_q8_0", lambda qs, d, ids, xq, xd: experts(qs, d, ids % 64, xq, xd)
    )
    inputs = workload.make_inputs(profile.load(TINY))
    gemm = PromptGemm(inputs.w)
    results = workload.execute(
        lib, gemm, workload.wall_clock, inputs, kernels, TunedDispatch(None, "host BLAS")
    )

    def checked():
        workload.check(inputs, results, kernels, reference, gemm, "numpy", "the host library")

    with pytest.raises(StrataError, match="^router_topk gave a wrong result in decode step 2"):
        checked()
    first_expert = 2
    assert inputs.calls[first_expert].report == "expert_matvec_q8_0"
    results[first_expert] = (results[first_expert][0] * 2, 0.0)
    wrong = "^expert_matvec_q8_0 gave a wrong result in decode step 1"
    with pytest.raises(StrataError, match=wrong):
        checked()


def test_the_first_wrong_result_in_the_runs_order_is_the_one_named(monkeypatch):
    """Results are checked a kind at a time, and the error still names the earliest call that
    differs: a wrong top-k in decode step 1 before a wrong matvec in decode step 2."""
    lib, kernels = HostLibrary(), _host_choices()
    inputs = workload.make_inputs(profile.load(TINY))
    gemm = PromptGemm(inputs.w)
    results = workload.execute(
        lib, gemm, workload.wall_clock, inputs, kernels, TunedDispatch(None, "host BLAS")
    )
    matvec_2, topk_1 = 4, 3
    assert [inputs.calls[i].report for i in (topk_1, matvec_2)] == ["topk", "matvec_q8_0"]
    results[matvec_2] = (results[matvec_2][0] + 1, 0.0)
    with pytest.raises(StrataError, match="^matvec_q8_0 gave a wrong result in decode step 2"):
        workload.check(inputs, results, kernels, reference, gemm, "numpy", "the host library")
    ids, values = results[topk_1][0]
    results[topk_1] = ((ids[::-1].copy(), values), 0.0)
    with pytest.raises(StrataError, match="^topk gave a wrong result in decode step 1"):
        workload.check(inputs, results, kernels, reference, gemm, "numpy", "the host library")
