"""The kernel library on an NVIDIA GPU, side by side with PyTorch on the same card: each kernel's
median time over event-timed repeats on inputs uploaded once, with the queue held by a long
kernel before each timed call so that the events time the GPU and not the host's launch
latency (PyTorch's calls are held the same way), and a launch that does nothing timed so,
the floor of any call; matvec_q8_0 on a decode step's shapes and large ones against the
card's read bandwidth (the library's read kernel over 4 GiB, and beside it a device-to-device
copy through PyTorch counting the bytes read), with the read kernel's own share over as many
bytes as the kernel reads (what a read of that size reaches, its launch and ramp included),
top-k (256 queries and one, the variant the plan names for the shape, and the register kernel
where the page's switch runs it) against torch.topk and the read, the router against
torch.topk + softmax. Every result is checked against the host backend first.

    python bench/gpu_kernels.py [--repeats N] [--only matvec|experts|topk|router ...]
                                [--json FILE [--commit REV]]

--json also writes the figures (bench/bench_json.py): the card, its driver, the date, the commit
(--commit names it where the tree is not a git checkout) and each case beside its peers;
bench/results_page.py draws docs/results.md from such files.

Needs strata[cuda] installed, the NVIDIA driver, and PyTorch with CUDA.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import bench_json
import numpy as np
import torch

from strata_core import q8
from strata_core.api.kernels import topk_choice
from strata_core.api.manager import PluginManager
from strata_core.cuda.driver import CudaDriver, candidate_paths
from strata_core.gpu.library import GpuKernels, start_check
from strata_core.host import reference
from strata_core.host.library import HostLibrary
from strata_core.run.workload import random_experts

GB = 1e9
#: what holds the queue before each timed call: the read kernel over 1 GiB for ours, a spin of
#: about a millisecond for PyTorch's
HOLD_BYTES = 1 << 30
HOLD_CYCLES = 2_000_000
#: a decode step's shapes (rows x cols) and the large ones
MATVEC_SHAPES = ((4096, 4096), (14336, 4096), (4096, 14336), (16384, 32768), (151936, 4096))
#: the large-moe profile's expert step: (experts, rows, cols, k) and the tokens of each step
EXPERTS, EXPERT_ROWS, HIDDEN, EXPERT_K = 256, 2048, 7168, 8
EXPERT_TOKENS = (1, 64)
#: (tokens, experts) of the router, k 8, with vLLM's topk_softmax (TensorRT-LLM's kernel) on
#: the H200 in microseconds, as issue 22 measured it (held events): compared on that card alone
ROUTER_SHAPES = {
    (1, 128): 5.3, (512, 128): 5.4, (4096, 128): 9.2, (16384, 128): 23.5, (512, 256): 5.7,
    (4096, 256): 10.7, (16384, 256): 28.7,
}
VLLM_CARD = "H200"
#: (queries, cells, k): the page's 256-query selection (AMD_HIP.md, History) and one query
TOPK_SHAPES = (
    (256, 524_288, 256), (256, 524_288, 2048), (256, 98_304, 256), (256, 262_144, 256),
    (1, 524_288, 256), (1, 524_288, 1024), (1, 131_072, 256),
)  # fmt: skip
#: STRATA_TOPK_STREAM=0: the register kernel on a prompt read in the 90K-135K band
REGISTER_ON_A_PROMPT_READ = {"STRATA_TOPK_STREAM": "0"}
#: seconds within which the driver has cleared the memory a call freed: meanwhile the card reads
#: slower (H100: 124.8 MB in 53-54 us against 45.5 us, for 10 ms after 4 GiB is freed and 21 ms
#: after 8 GiB)
FREED_CLEARED_S = 0.1
#: the bench's parts, each selectable with --only
PARTS = ["matvec", "experts", "topk", "router"]
#: where the NVIDIA driver's module says its version
NVIDIA_VERSION = Path("/sys/module/nvidia/version")

#: a printed row (what, its time, against what) and its case for --json, if it is one
Row = tuple[str, str, str, bench_json.Record | None]


def torch_ms(call, repeats: int, hold: bool = True) -> float:
    call()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if hold:
            torch.cuda._sleep(HOLD_CYCLES)
        start.record()
        call()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def ours_ms(kernels: GpuKernels, call) -> tuple[object, float]:
    result = call()
    return result, kernels.seconds * 1e3


def device_copy(repeats: int) -> tuple[float, float]:
    """A 4 GiB device-to-device copy: its time, and the bytes it read per second."""
    buffer = torch.empty(4 << 30, dtype=torch.uint8, device="cuda")
    copy = torch.empty_like(buffer)
    ms = torch_ms(lambda: copy.copy_(buffer), repeats, hold=False)
    return ms, buffer.numel() / (ms / 1e3) / GB


def of_read(
    kernels: GpuKernels, nbytes: int, gbs: float, read_gbs: float
) -> tuple[str, float]:
    """``gbs`` over ``nbytes`` as a share of the read kernel's 4 GiB rate, and beside it the
    read kernel's own share over as many bytes, timed the same way once the driver has cleared
    the memory the kernel's call freed; and that share."""
    time.sleep(FREED_CLEARED_S)
    same = kernels.read_bandwidth(nbytes, kernels.repeats) / read_gbs
    return (
        f"{gbs:,.0f} GB/s = {gbs / read_gbs:.0%} of read (a {nbytes / 1e6:,.1f} MB read: "
        f"{same:.0%})"
    ), same


def topk_rows(
    kernels: GpuKernels, host: HostLibrary, scores: np.ndarray, k: int, repeats: int, read_gbs
) -> list[Row]:
    """Our top-k of every row, with each variant the plan names for the shape (with and without
    STRATA_TOPK_STREAM=0), against the host library's ids and torch.topk on the same tensor;
    GB/s over the scores read once."""
    on_card = torch.from_numpy(scores).cuda()
    theirs = torch_ms(lambda: torch.topk(on_card, k), repeats)
    del on_card
    prompt_read = scores.ndim == 2
    variants = dict.fromkeys(
        topk_choice(switches, scores.shape[-1], prompt_read).variant
        for switches in ({}, REGISTER_ON_A_PROMPT_READ)
    )
    return [topk_row(kernels, host, scores, k, variant, theirs, read_gbs) for variant in variants]


def topk_row(
    kernels: GpuKernels,
    host: HostLibrary,
    scores: np.ndarray,
    k: int,
    variant: str,
    theirs: float,
    read_gbs: float,
) -> Row:
    (ids, _), ms = ours_ms(kernels, lambda: kernels.topk(scores, k, variant))
    assert np.array_equal(ids, host.topk(scores, k, "register")[0]), f"topk {k} differs"
    gbs = scores.nbytes / (ms / 1e3) / GB
    queries = f"{scores.shape[0]} x " if scores.ndim == 2 else ""
    read, same = of_read(kernels, scores.nbytes, gbs, read_gbs)
    torch_topk = bench_json.peer("torch", "torch.topk", theirs / 1e3, scores.nbytes, read_gbs)
    return (
        f"topk {k} of {queries}{scores.shape[-1]} {variant}",
        f"{ms:.3f} ms",
        f"{read}; torch.topk {theirs:.3f} ms: {theirs / ms:.2f}x",
        bench_json.case(
            "topk", f"{k} of {queries}{scores.shape[-1]}", ms / 1e3, variant=variant,
            nbytes=scores.nbytes, read_gbs=read_gbs, peers=[torch_topk],
            same_bytes_read_share=same,
        ),
    )  # fmt: skip


def matvec_row(
    kernels: GpuKernels, host: HostLibrary, rng, rows: int, cols: int, read_gbs, repeats: int
) -> Row:
    w = rng.standard_normal((rows, cols), dtype=np.float32)
    qs, d = q8.quantize_rows(w)
    del w
    xq, xd = q8.quantize_vector(rng.standard_normal(cols, dtype=np.float32))
    y, ms = ours_ms(kernels, lambda: kernels.matvec_q8_0(qs, d, xq, xd))
    want = host.matvec_q8_0(qs, d, xq, xd)
    assert np.allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max()), "matvec differs"
    gbs = (qs.nbytes + d.nbytes) / (ms / 1e3) / GB
    weights = torch.from_numpy(qs).cuda().half()
    x = torch.randn(cols, dtype=torch.half, device="cuda")
    theirs = torch_ms(lambda: torch.mv(weights, x), repeats)
    fp16_bytes = weights.nbytes + x.nbytes
    del weights
    read, same = of_read(kernels, qs.nbytes + d.nbytes, gbs, read_gbs)
    torch_mv = bench_json.peer("torch", "torch.mv, FP16", theirs / 1e3, fp16_bytes, read_gbs)
    return (
        f"matvec_q8_0 {rows}x{cols}",
        f"{ms:.3f} ms",
        f"{read}; torch FP16 mv {theirs:.3f} ms",
        bench_json.case(
            "matvec_q8_0", f"{rows}x{cols}", ms / 1e3, nbytes=qs.nbytes + d.nbytes,
            read_gbs=read_gbs, peers=[torch_mv], same_bytes_read_share=same,
        ),
    )  # fmt: skip


def expert_rows(kernels: GpuKernels, host: HostLibrary, rng, read_gbs) -> list[Row]:
    """The expert step of large-moe for each of EXPERT_TOKENS, ids as a router gives them
    (k distinct experts a token); GB/s over the distinct experts read."""
    qs, d = random_experts(rng, EXPERTS, EXPERT_ROWS, HIDDEN)
    expert_bytes = qs[0].nbytes + d[0].nbytes
    rows = []
    for tokens in EXPERT_TOKENS:
        ids = np.stack([rng.permutation(EXPERTS)[:EXPERT_K] for _ in range(tokens)])
        ids = ids.astype(np.int32)
        xq, xd = q8.quantize_rows(rng.standard_normal((tokens, HIDDEN), dtype=np.float32))
        xd = xd.astype(np.float32)
        y, ms = ours_ms(kernels, lambda: kernels.expert_matvec_q8_0(qs, d, ids, xq, xd))
        want = host.expert_matvec_q8_0(qs, d, ids, xq, xd)
        assert np.allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max()), "experts differ"
        distinct = len(np.unique(ids))
        read = distinct * expert_bytes
        gbs = read / (ms / 1e3) / GB
        text, same = of_read(kernels, read, gbs, read_gbs)
        shape = f"{tokens} tok x {EXPERT_K} of {EXPERTS}"
        rows.append((
            f"experts {shape}",
            f"{ms:.3f} ms",
            f"{distinct} experts read: {text}",
            bench_json.case(
                "expert_matvec_q8_0", f"{shape} ({distinct} read)", ms / 1e3, nbytes=read,
                read_gbs=read_gbs, same_bytes_read_share=same,
            ),
        ))  # fmt: skip
    return rows


def router_row(
    kernels: GpuKernels, rng, tokens: int, experts: int, vllm_us: float | None, repeats, read_gbs
) -> Row:
    logits = rng.standard_normal((tokens, experts), dtype=np.float32)
    (ids, weights), ms = ours_ms(kernels, lambda: kernels.router_topk(logits, 8, "fast"))
    want_ids, want_weights = reference.router_topk(logits, 8)
    assert np.array_equal(ids, want_ids) and np.allclose(weights, want_weights, rtol=1e-5)
    on_card = torch.from_numpy(logits).cuda()

    def torch_router():
        values, chosen = torch.topk(on_card, 8, dim=1)
        return torch.softmax(values, dim=1), chosen

    theirs = torch_ms(torch_router, repeats)
    vllm = (
        f"vLLM topk_softmax {vllm_us:.1f} us: {vllm_us / (ms * 1e3):.2f}x"
        if vllm_us is not None
        else f"vLLM topk_softmax: timed on an {VLLM_CARD} only"
    )
    torch_router_peer = bench_json.peer(
        "torch", "torch.topk + softmax", theirs / 1e3, logits.nbytes, read_gbs
    )
    peers = [torch_router_peer]
    if vllm_us is not None:
        note = f"not timed in this run: issue 22's median on an {VLLM_CARD}"
        peers.append(bench_json.peer("vllm", "topk_softmax", vllm_us / 1e6, note=note))
    return (
        f"router_topk {tokens}x{experts} k=8",
        f"{ms * 1e3:.1f} us",
        f"torch.topk+softmax {theirs * 1e3:.1f} us: {theirs / ms:.2f}x; {vllm}",
        bench_json.case(
            "router_topk", f"{tokens}x{experts} k=8", ms / 1e3, variant="fast",
            nbytes=logits.nbytes, read_gbs=read_gbs, peers=peers,
        ),
    )  # fmt: skip


def card_machine(
    card, kernels: GpuKernels, driver: CudaDriver, repeats: int
) -> bench_json.Record:
    """The card as the JSON record names it."""
    try:
        nvidia = NVIDIA_VERSION.read_text().strip()
    except OSError:
        nvidia = None
    return {
        "kind": "gpu",
        "name": card.name,
        "target": card.gfx,
        "code_object": kernels.code.path.name,
        "driver": nvidia,
        "cuda_driver": driver.version(),
        "torch": torch.__version__,
        "repeats": repeats,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument(
        "--only", nargs="+", choices=PARTS, default=PARTS, help="the parts to run (default: all)"
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures here")
    parser.add_argument("--commit", help="the commit measured (default: the checkout's)")
    args = parser.parse_args()
    repeats, parts = args.repeats, set(args.only)
    torch.cuda.init()
    driver = CudaDriver(candidate_paths({}))
    card = driver.card(0)
    library = PluginManager.discover({}).kernel_libraries()["cuda"]
    code = start_check("cuda", library, card)
    kernels = GpuKernels(driver, code, card, repeats=repeats, hold_bytes=HOLD_BYTES)
    host = HostLibrary()
    rng = np.random.default_rng(0)
    rows: list[Row] = []

    copy_ms, copy_gbs = device_copy(repeats)
    copy = {"name": "torch copy 4 GiB (read side)", "seconds": copy_ms / 1e3, "gbs": copy_gbs}
    rows.append((copy["name"], f"{copy_ms:.3f} ms", f"{copy_gbs:,.0f} GB/s", None))
    read_gbs = kernels.read_bandwidth(4 << 30, repeats)
    read = {"what": "the read kernel over 4 GiB", "gbs": read_gbs}
    rows.append(("read kernel 4 GiB", "", f"{read_gbs:,.0f} GB/s", None))

    if "matvec" in parts:
        for rows_, cols in MATVEC_SHAPES:
            rows.append(matvec_row(kernels, host, rng, rows_, cols, read_gbs, repeats))
    if "experts" in parts:
        rows += expert_rows(kernels, host, rng, read_gbs)
    if "topk" in parts:
        for queries, n, k in TOPK_SHAPES:
            shape = (queries, n) if queries > 1 else (n,)
            scores = rng.standard_normal(shape, dtype=np.float32)
            rows += topk_rows(kernels, host, scores, k, repeats, read_gbs)
            del scores
    if "router" in parts:
        on_vllm_card = VLLM_CARD in card.name
        for (tokens, experts), vllm_us in ROUTER_SHAPES.items():
            vllm = vllm_us if on_vllm_card else None
            rows.append(router_row(kernels, rng, tokens, experts, vllm, repeats, read_gbs))
    floor_us = 16 / (kernels.read_bandwidth(16, repeats) * GB) * 1e6
    floor = {"name": "one launch (read kernel, 16 B)", "seconds": floor_us / 1e6}
    rows.append((floor["name"], f"{floor_us:.1f} us", "the floor of any call", None))
    kernels.close()
    print(f"{card.name} ({card.gfx}), {kernels.code.path.name}; medians of {repeats}, held")
    for name, took, against, _ in rows:
        print(f"  {name:<32} {took:>12}   {against}")
    if args.json:
        cases = [case for *_, case in rows if case is not None]
        machine = card_machine(card, kernels, driver, repeats)
        commit = args.commit or bench_json.git_commit()
        answer = bench_json.record("gpu_kernels", commit, machine, read, cases, [copy, floor])
        bench_json.write(args.json, answer)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
