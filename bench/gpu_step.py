"""A whole decode step on an NVIDIA GPU, as an engine runs it, side by side with PyTorch on the
same card: the first decode step of each profile (dense-8b: 32 layers of Llama 3 8B's
matrices in Q8_0, 7.4 GB; large-moe: the dense matrix, the router, one token's experts and the
context's top-k) recorded on buffers kept on the card, then timed as queued launches,
replayed as a CUDA graph, and replayed as a graph whose launches overlap the kernel before
(programmatic dependent launch, sm_90; strata_core/gpu/step_graph.py); beside it the same
chain as FP16 torch.mv calls (torch.topk for the router and the top-k), eager and captured in a
torch.cuda.CUDAGraph. FP16 reads two bytes a weight where Q8_0 reads 1.0625, so the figures
to compare are shares of the card's read rate (the library's read kernel over 4 GiB) over
each side's own bytes. Every result of the step is checked against the host backend first.

    python bench/gpu_step.py [--repeats N] [--profiles dense-8b large-moe]
                             [--json FILE [--commit REV]]

Needs strata[cuda] installed, the NVIDIA driver, and PyTorch with CUDA.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import bench_json
import numpy as np
import torch
from gpu_kernels import HOLD_BYTES, card_machine, torch_ms

from strata_core.api.manager import PluginManager
from strata_core.api.records import KernelChoice
from strata_core.cuda.driver import CudaDriver, candidate_paths
from strata_core.gpu.library import GpuKernels, start_check
from strata_core.gpu.step_graph import StepTimes, time_step
from strata_core.host.library import HostLibrary
from strata_core.plan import profile
from strata_core.run import workload
from strata_core.run.gpu_backend import KernelGemm
from strata_core.run.runner import HostReference
from strata_core.tuning.dispatch import TunedDispatch

PROFILES = ("dense-8b", "large-moe")
#: the kernel variants the plan gives an sm_90 card
CHOICES = {
    op: KernelChoice(op, variant, "bench")
    for op, variant in (("matvec_q8_0", "dp4a"), ("router_topk", "fast"), ("topk", "register"))
}


def strata_step(
    kernels: GpuKernels, host: HostLibrary, inputs: workload.Inputs, repeats: int
) -> tuple[StepTimes, list[tuple[object, float]]]:
    """The first decode step recorded on the card (its results checked against the host
    backend), timed queued, as a graph and as a graph of overlapping launches."""
    step = workload.one_step(inputs)
    gemm = KernelGemm(kernels, inputs.w)  # the step has no prompt GEMM: execute asks its key
    with kernels.recording() as recorded:
        results = workload.execute(
            kernels, gemm, lambda call: (call(), 0.0), step, CHOICES, TunedDispatch(None, "")
        )
        wrong = workload.first_wrong(step, results, HostReference(host, CHOICES), None)
        assert wrong is None, f"{step.calls[wrong].op} of the step differs from the host's"
        return time_step(recorded, repeats), results


def torch_chain(
    inputs: workload.Inputs, ids: np.ndarray | None
) -> tuple[Callable[[], None], int]:
    """The step as PyTorch calls on FP16 copies of its weights (the experts the router chose
    in the step, ``ids``), and the bytes they read."""
    step = workload.one_step(inputs)
    calls: list[Callable[[], object]] = []
    nbytes = 0
    for call in step.calls:
        if call.op == "matvec_q8_0":
            weights = torch.from_numpy(inputs.dense[call.matrix][0]).cuda().half()
            x = torch.randn(weights.shape[1], dtype=torch.half, device="cuda")
            calls.append(lambda w=weights, x=x: torch.mv(w, x))
            nbytes += weights.nbytes
        elif call.op == "router_topk":
            logits = torch.from_numpy(call.inputs[0]).cuda()
            k = inputs.workload.experts_per_token
            calls.append(lambda t=logits, k=k: torch.softmax(torch.topk(t, k, dim=1)[0], dim=1))
            nbytes += logits.nbytes
        elif call.op == "expert_matvec_q8_0":
            assert ids is not None
            chosen = [torch.from_numpy(inputs.expert_qs[e]).cuda().half() for e in ids.ravel()]
            x = torch.randn(chosen[0].shape[1], dtype=torch.half, device="cuda")
            calls += [lambda w=w, x=x: torch.mv(w, x) for w in chosen]
            nbytes += sum(w.nbytes for w in chosen)
        else:
            scores = torch.from_numpy(call.inputs[0]).cuda()
            calls.append(lambda t=scores, k=inputs.workload.cells_kept: torch.topk(t, k))
            nbytes += scores.nbytes

    def chain() -> None:
        for call in calls:
            call()

    return chain, nbytes


def torch_times(chain: Callable[[], None], repeats: int) -> tuple[float, float]:
    """The chain's seconds eager (its launches queued behind a held queue) and replayed from a
    torch.cuda.CUDAGraph."""
    eager = torch_ms(chain, repeats) / 1e3
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        chain()  # warm-up off the capture, as torch.cuda.graph asks
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        chain()
    replayed = torch_ms(graph.replay, repeats) / 1e3
    return eager, replayed


def profile_rows(
    kernels: GpuKernels, host: HostLibrary, name: str, repeats: int, read_gbs: float
) -> tuple[list[str], bench_json.Record]:
    inputs = workload.make_inputs(profile.load(profile.named(name)))
    times, results = strata_step(kernels, host, inputs, repeats)
    nbytes = workload.step_bytes(workload.one_step(inputs), results, workload.REPLAYED_STEP)
    routers = [r for (r, _), c in zip(results, workload.one_step(inputs).calls, strict=True)
               if c.op == "router_topk"]  # fmt: skip
    chain, torch_bytes = torch_chain(inputs, routers[0][0] if routers else None)
    eager, replayed = torch_times(chain, repeats)
    del chain
    torch.cuda.empty_cache()

    def share(seconds: float | None, read: int = nbytes) -> str:
        return "-" if seconds is None else f"{read / seconds / 1e9 / read_gbs:.0%}"

    def ms(seconds: float | None) -> str:
        return "-" if seconds is None else f"{seconds * 1e3:.3f} ms"

    lines = [
        f"{name} decode step: {times.launches} launches, {nbytes / 1e9:.3f} GB",
        f"  strata graph          {ms(times.graph_s):>10}  {share(times.graph_s)} of read"
        + (f" ({times.graph_missing})" if times.graph_missing else ""),
        f"  strata overlapping    {ms(times.handover_s):>10}  {share(times.handover_s)} of read"
        + (f" ({times.handover_missing})" if times.handover_missing else ""),
        f"  strata queued         {ms(times.queued_s):>10}  {share(times.queued_s)} of read",
        f"  torch graph           {ms(replayed):>10}  {share(replayed, torch_bytes)} of read "
        f"(FP16, {torch_bytes / 1e9:.3f} GB)",
        f"  torch eager           {ms(eager):>10}  {share(eager, torch_bytes)} of read",
    ]
    peers = [
        bench_json.peer("strata", "queued launches", times.queued_s, nbytes, read_gbs),
        *(
            [bench_json.peer("strata", "graph, launches handing over", times.handover_s,
                             nbytes, read_gbs)]  # fmt: skip
            if times.handover_s is not None
            else []
        ),
        bench_json.peer(
            "torch", "FP16 torch.mv chain, CUDA graph", replayed, torch_bytes, read_gbs
        ),
        bench_json.peer("torch", "FP16 torch.mv chain, eager", eager, torch_bytes, read_gbs),
    ]
    seconds = times.graph_s if times.graph_s is not None else times.queued_s
    case = bench_json.case(
        "decode_step", name, seconds, variant="graph" if times.graph_s is not None else "queued",
        nbytes=nbytes, read_gbs=read_gbs, peers=peers,
    )  # fmt: skip
    return lines, case


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--profiles", nargs="+", choices=PROFILES, default=list(PROFILES))
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures here")
    parser.add_argument("--commit", help="the commit measured (default: the checkout's)")
    args = parser.parse_args()
    torch.cuda.init()
    driver = CudaDriver(candidate_paths({}))
    card = driver.card(0)
    library = PluginManager.discover({}).kernel_libraries()["cuda"]
    code = start_check("cuda", library, card)
    host = HostLibrary()

    def on_the_card() -> GpuKernels:
        return GpuKernels(driver, code, card, repeats=args.repeats, hold_bytes=HOLD_BYTES)

    kernels = on_the_card()
    read_gbs = kernels.read_bandwidth(4 << 30, args.repeats)
    kernels.close()
    print(f"{card.name} ({card.gfx}), {code.path.name}; read kernel 4 GiB {read_gbs:,.0f} GB/s;"
          f" medians of {args.repeats}, held")  # fmt: skip
    cases = []
    for name in args.profiles:  # each on a card holding its own weights alone
        kernels = on_the_card()
        lines, case = profile_rows(kernels, host, name, args.repeats, read_gbs)
        kernels.close()
        print("\n".join(lines), flush=True)
        cases.append(case)
    if args.json:
        machine = card_machine(card, kernels, driver, args.repeats)
        read = {"what": "the read kernel over 4 GiB", "gbs": read_gbs}
        commit = args.commit or bench_json.git_commit()
        answer = bench_json.record("gpu_step", commit, machine, read, cases)
        bench_json.write(args.json, answer)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
