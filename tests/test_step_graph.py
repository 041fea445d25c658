"""A decode step replayed as a graph (strata_core/gpu/step_graph.py) through the stand-in
runtimes of tests/fixtures/hip_stand_in.c, whose streams capture launches into graphs that
replay them in order; the dense profiles whose decode step is a chain of matvecs."""

import json
from functools import partial
from pathlib import Path

import attrs
import numpy as np
import pytest
from cli_runner import strata_core

from strata_core.api.records import Workload
from strata_core.errors import StrataError
from strata_core.gpu.step_graph import STEP_REPEATS
from strata_core.host import reference
from strata_core.plan import profile
from strata_core.run import workload
from strata_core.testing.sysfs import R9700, write_nvidia_gpu, write_sysfs

FIXTURES = Path(__file__).parent / "fixtures"
TINY = FIXTURES / "profiles" / "tiny.toml"
run = partial(strata_core, check=False)
#: a small dense model: two layers of three matrices, no router and no experts
TINY_DENSE = """\
name = "tiny-dense"
hidden = 256
ffn = 128
experts = 0
experts_per_token = 0
dense = [[96, 256], [64, 96], [160, 64]]
layers = 2
context_cells = 5000
cells_kept = 32
prompt_tokens = 8
prompt_queries = 4
decode_steps = 2
prompt_steps = 1
gpu_read_bytes = 1048576
"""


@pytest.fixture
def dense_profile(tmp_path):
    path = tmp_path / "tiny-dense.toml"
    path.write_text(TINY_DENSE)
    return path


@pytest.fixture
def on_cuda(tmp_path, env, emulating_stand_in, with_driver):
    """`run` on the stand-in CUDA driver (an H200, launches computed and logged):
    ``on_cuda(profile, *args, **env)`` gives the result and the logged launches."""
    root = write_nvidia_gpu(tmp_path / "sys", "0000:41:00.0")

    def stand_in_run(path, *args, **more):
        launches = tmp_path / "launches"
        launches.unlink(missing_ok=True)
        carried = with_driver(env, emulating_stand_in, STAND_IN_LAUNCHES=str(launches), **more)
        result = run("run", *args, "--profile", str(path), "--sysfs", str(root), env=carried)
        logged = [line.split() for line in launches.read_text().splitlines()]
        return result, logged

    return stand_in_run


def kernels_of(logged):
    """The launches but the read kernel (the hold and the bandwidth's)."""
    return [line for line in logged if line[0] != "strata_read_bytes"]


def test_the_decode_step_is_replayed_as_a_graph_of_its_launches_in_order(on_cuda):
    result, logged = on_cuda(TINY, "--json")
    assert result.returncode == 0, result.stderr
    step = json.loads(result.stdout)["step"]
    # decode step 1 of tiny.toml: the matvec, the router, the expert step, the top-k's two
    # stages (the register kernel)
    launched = kernels_of(logged)
    runs = 3 * STEP_REPEATS + 2  # queued, replayed and replayed handing over; two checks
    recorded = launched[-(runs + 1) * 5 :][:5]
    assert [line[0] for line in recorded] == [
        "strata_matvec_q8_0", "strata_router_topk", "strata_expert_pairs_q8_0", "strata_topk",
        "strata_topk",
    ]  # fmt: skip
    # after it is recorded: queued twenty times, replayed twenty times and once more for the
    # check, then so again as a graph of launches that hand over (cuLaunchKernelEx), the same
    # launches with the same arguments each time, in the order recorded
    assert launched[-runs * 5 :] == recorded * runs
    assert step["name"] == "decode step 1" and step["launches"] == 5
    assert step["graph_missing"] is None and step["handover_missing"] is None
    # the stand-in's events say 0.25 ms for whatever ran last between them
    assert step["graph_ms"] == step["queued_ms"] == step["handover_ms"] == 0.25
    assert step["graph_share_of_read"] == step["queued_share_of_read"] > 0


@pytest.mark.parametrize(
    ("more", "why"),
    [
        ({"STAND_IN_FAULT": "no-handover"},
         "cuLaunchKernelEx(matvec_q8_0) failed: CUDA_ERROR_NOT_SUPPORTED (801)"),
        ({"STAND_IN_ARCH": "sm_89"},
         "the sm_89 code's kernels do not wait for the one before (sm_90 and newer)"),
    ],
)  # fmt: skip
def test_launches_hand_over_only_where_the_kernels_wait_and_the_driver_can(on_cuda, more, why):
    result, _ = on_cuda(TINY, "--json", **more)
    assert result.returncode == 0, result.stderr
    step = json.loads(result.stdout)["step"]
    assert step["graph_ms"] == 0.25 and step["handover_ms"] is None
    assert step["handover_missing"].startswith(why)
    text, _ = on_cuda(TINY, **more)
    assert f"as queued launches; no overlapping launches: {why}" in " ".join(text.stdout.split())


def test_the_step_reads_what_its_calls_read(on_cuda):
    result, _ = on_cuda(TINY, "--json")
    step = json.loads(result.stdout)["step"]
    tiny = profile.load(TINY)
    matvec = tiny.ffn * tiny.hidden * 17 // 16
    expert = matvec  # each expert is an ffn x hidden Q8_0 matrix; one token names k of them
    logits, scores = 4 * tiny.experts, 4 * tiny.context_cells
    assert step["bytes_read"] == matvec + logits + tiny.experts_per_token * expert + scores


def test_a_runtime_that_refuses_graphs_runs_the_step_as_queued_launches_and_says_so(on_cuda):
    result, logged = on_cuda(TINY, "--json", STAND_IN_FAULT="no-graphs")
    assert result.returncode == 0, result.stderr
    step = json.loads(result.stdout)["step"]
    assert step["graph_ms"] is None and step["graph_share_of_read"] is None
    assert step["queued_ms"] == 0.25
    assert step["graph_missing"].startswith("cuStreamBeginCapture failed: CUDA_ERROR_NOT_SUPPORTED")
    text, _ = on_cuda(TINY, STAND_IN_FAULT="no-graphs")
    line = " ".join(text.stdout.split())
    assert "as queued launches; no graph replay: cuStreamBeginCapture failed" in line


def test_a_graph_whose_replay_differs_from_the_calls_is_not_trusted(on_cuda):
    result, _ = on_cuda(TINY, "--json", STAND_IN_FAULT="graph-drops-last")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith(
        "the decode step replayed as a graph gave other results than its calls; the graph "
        "replay is not to be trusted"
    )


def test_the_text_report_gives_the_step_beside_the_kernel_table(on_cuda):
    result, _ = on_cuda(TINY)
    assert result.returncode == 0, result.stderr
    line = " ".join(result.stdout.split())
    assert "decode step 1 on the card: 5 launches reading 264 KB: 250 us (" in line
    assert "as a graph, 250 us (" in line
    assert "as a graph of launches that overlap the one before, 250 us" in line
    assert "as queued launches" in line


def test_the_hip_backend_replays_the_step_through_hipgraph(tmp_path, env, emulating_stand_in):
    root = write_sysfs(tmp_path / "sys", [R9700])
    carried = env | {
        "STRATA_HIP_LIBRARY": emulating_stand_in,
        "STRATA_ROCBLAS_LIBRARY": emulating_stand_in,
        "STAND_IN_FAULT": "no-graphs",
    }
    refused = run("run", "--json", "--profile", str(TINY), "--sysfs", str(root), env=carried)
    assert json.loads(refused.stdout)["step"]["graph_missing"].startswith(
        "hipStreamBeginCapture failed: hipErrorNotSupported"
    )
    del carried["STAND_IN_FAULT"]
    answer = json.loads(
        run("run", "--json", "--profile", str(TINY), "--sysfs", str(root), env=carried).stdout
    )
    assert answer["backend"] == "hip"
    assert answer["step"]["graph_missing"] is None and answer["step"]["graph_ms"] == 0.25
    assert answer["step"]["handover_missing"] == "HIP has no programmatic dependent launch"


def test_a_dense_profile_runs_each_layers_matrices_in_order_and_checks_each(
    on_cuda, dense_profile
):
    result, logged = on_cuda(dense_profile, "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    kernels = answer["kernels"]
    shapes = ["96x256", "64x96", "160x64"]
    assert set(kernels) == {*(f"matvec_q8_0 {s}" for s in shapes), "topk", "topk_prompt",
                            "prompt_gemm"}  # fmt: skip
    for shape in shapes:
        rows, cols = map(int, shape.split("x"))
        report = kernels[f"matvec_q8_0 {shape}"]
        assert report["checked"] == report["calls"] == 2 * 2  # two steps of two layers
        assert report["bandwidth_gbs"] == pytest.approx(rows * cols * 17 / 16 / 0.25e-3 / 1e9)
    step = answer["step"]
    assert step["launches"] == 2 * 3 + 2  # two layers of three matvecs, the top-k's stages
    weights = sum(rows * cols * 17 // 16 for rows, cols in ((96, 256), (64, 96), (160, 64)))
    assert step["bytes_read"] == 2 * weights + 4 * 5000
    last = kernels_of(logged)[-step["launches"] :]
    rows = [int.from_bytes(bytes.fromhex(line[3])[40:48], "little") for line in last[:6]]
    assert rows == [96, 64, 160] * 2  # matvec_q8_0's rows follow its five buffers


def test_a_dense_profile_runs_on_the_host(tmp_path, env, dense_profile):
    result = run("run", "--json", "--profile", str(dense_profile), "--sysfs", str(tmp_path),
                 env=env)  # fmt: skip
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["backend"] == "host" and answer["step"] is None
    kernels = answer["kernels"]
    assert set(kernels) == {"matvec_q8_0 96x256", "matvec_q8_0 64x96", "matvec_q8_0 160x64",
                            "topk", "topk_prompt", "prompt_gemm"}  # fmt: skip
    assert all(k["checked"] == k["calls"] == 4 for n, k in kernels.items() if " " in n)


class MatvecReference:
    """The numpy reference, for matvecs alone."""

    def expert_matvec_q8_0(self, qs, d, ids, xq, xd):
        return reference.expert_matvec_q8_0(qs, d, ids, xq, xd)


def test_a_wrong_matvec_of_one_dense_matrix_is_found_among_the_others(dense_profile):
    inputs = workload.make_inputs(profile.load(dense_profile))
    matvecs = attrs.evolve(inputs, calls=tuple(c for c in inputs.calls if c.op == "matvec_q8_0"))
    results = [
        (reference.expert_matvec_q8_0(*(part[None] for part in inputs.dense[call.matrix]),
                                      np.zeros((1, 1), np.int32), call.inputs[0][None],
                                      call.inputs[1][None])[0, 0], 0.0)
        for call in matvecs.calls
    ]  # fmt: skip
    assert workload.first_wrong(matvecs, results, MatvecReference(), None) is None
    wrong = [c.report for c in matvecs.calls].index("matvec_q8_0 64x96", 3)
    results[wrong] = (results[wrong][0] * 1.01, 0.0)
    assert workload.first_wrong(matvecs, results, MatvecReference(), None) == wrong


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"experts": 0},
         "experts and experts_per_token must both be 0 (a dense model) or both be positive"),
        ({"layers": 0}, "layers: expected a positive integer, got 0"),
        ({"dense": [[64, 48]]}, "dense: each matrix's columns are a multiple of 32 (Q8_0)"),
        ({"dense": [[0, 64]]}, "dense: expected positive rows and columns"),
        ({"hidden": 0}, "hidden: expected a positive integer, got 0"),
    ],
)
def test_a_profile_with_a_wrong_dense_shape_or_count_is_refused_in_one_line(
    tmp_path, change, why
):
    import tomli_w

    raw = {"name": "p", "hidden": 256, "ffn": 128, "experts": 8, "experts_per_token": 2} | change
    path = tmp_path / "p.toml"
    path.write_text(tomli_w.dumps(raw))
    with pytest.raises(StrataError) as refused:
        profile.load(path)
    assert str(refused.value) == f"{path}: {why}"


def test_the_shipped_dense_8b_profile_is_llama_3_8b_in_q8_0():
    dense = profile.load(profile.named("dense-8b"))
    assert (dense.experts, dense.layers) == (0, 32)
    assert dense.dense == ((6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336))
    step = dense.layers * sum(rows * cols * 17 // 16 for rows, cols in dense.dense)
    assert round(step / 1e9, 1) == 7.4
    assert isinstance(dense, Workload)
