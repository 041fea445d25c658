"""The kernel library on an NVIDIA GPU, side by side with PyTorch on the same card: each kernel's
median time over event-timed repeats on inputs uploaded once, with the queue held by a long
kernel before each timed call so that the events time the GPU and not the host's launch
latency (PyTorch's calls are held the same way), and a launch that does nothing timed so,
the floor of any call; matvec_q8_0 (544 MiB, several times the L2)
against the card's read bandwidth (the library's read kernel, and beside it a device-to-device
copy through PyTorch counting the bytes read), top-k against torch.topk, the router against
torch.topk + softmax. Every result is checked against the host backend first.

    python bench/gpu_kernels.py [--repeats N]

Needs strata[cuda] installed, the NVIDIA driver, and PyTorch with CUDA.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
import torch

from strata_core.cuda.driver import CudaDriver, candidate_paths
from strata_core.hip.library import GpuKernels, start_check
from strata_core.host import q8, reference
from strata_core.host.library import HostLibrary
from strata_core.manager import PluginManager

GB = 1e9
#: what holds the queue before each timed call: the read kernel over 1 GiB for ours, a spin of
#: about a millisecond for PyTorch's
HOLD_BYTES = 1 << 30
HOLD_CYCLES = 2_000_000


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


def topk_row(kernels: GpuKernels, scores: np.ndarray, k: int, repeats: int) -> tuple:
    (ids, _), ms = ours_ms(kernels, lambda: kernels.topk(scores, k, "radix"))
    assert np.array_equal(ids, reference.topk(scores, k)[0]), f"topk {k} differs"
    on_card = torch.from_numpy(scores).cuda()
    theirs = torch_ms(lambda: torch.topk(on_card, k), repeats)
    return (
        f"topk {k} of {scores.size}",
        f"{ms:.3f} ms",
        f"torch.topk {theirs:.3f} ms: {theirs / ms:.2f}x",
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    repeats = parser.parse_args().repeats
    torch.cuda.init()
    driver = CudaDriver(candidate_paths({}))
    card = driver.card(0)
    library = PluginManager.discover({}).kernel_libraries()["cuda"]
    code = start_check("cuda", library, card)
    kernels = GpuKernels(driver, code, card, repeats=repeats, hold_bytes=HOLD_BYTES)
    host = HostLibrary()
    rng = np.random.default_rng(0)
    rows = []

    copy_ms, copy_gbs = device_copy(repeats)
    rows.append(("torch copy 4 GiB (read side)", f"{copy_ms:.3f} ms", f"{copy_gbs:,.0f} GB/s"))
    read_gbs = kernels.read_bandwidth(4 << 30, repeats)
    rows.append(("read kernel 4 GiB", "", f"{read_gbs:,.0f} GB/s"))

    w = rng.standard_normal((16384, 32768), dtype=np.float32)
    qs, d = q8.quantize_rows(w)
    del w
    xq, xd = q8.quantize_vector(rng.standard_normal(32768, dtype=np.float32))
    y, ms = ours_ms(kernels, lambda: kernels.matvec_q8_0(qs, d, xq, xd))
    want = host.matvec_q8_0(qs, d, xq, xd)
    assert np.allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max()), "matvec differs"
    gbs = (qs.nbytes + d.nbytes) / (ms / 1e3) / GB
    rows.append(
        (
            "matvec_q8_0 16384x32768",
            f"{ms:.3f} ms",
            f"{gbs:,.0f} GB/s = {gbs / read_gbs:.0%} of read",
        )
    )

    for k in (256, 1024):
        rows.append(topk_row(kernels, rng.standard_normal(524_288, dtype=np.float32), k, repeats))

    logits = rng.standard_normal((512, 128), dtype=np.float32)
    (ids, weights), ms = ours_ms(kernels, lambda: kernels.router_topk(logits, 8, "fast"))
    want_ids, want_weights = reference.router_topk(logits, 8)
    assert np.array_equal(ids, want_ids) and np.allclose(weights, want_weights, rtol=1e-5)
    on_card = torch.from_numpy(logits).cuda()

    def torch_router():
        values, chosen = torch.topk(on_card, 8, dim=1)
        return torch.softmax(values, dim=1), chosen

    theirs = torch_ms(torch_router, repeats)
    rows.append(("router_topk 512x128 k=8", f"{ms * 1e3:.1f} us",
                 f"torch.topk+softmax {theirs * 1e3:.1f} us: {theirs / ms:.2f}x"))  # fmt: skip
    floor_us = 16 / (kernels.read_bandwidth(16, repeats) * GB) * 1e6
    rows.append(("one launch (read kernel, 16 B)", f"{floor_us:.1f} us", "the floor of any call"))
    kernels.close()
    print(f"{card.name} ({card.gfx}), {kernels.code.path.name}; medians of {repeats}, held")
    for name, time, against in rows:
        print(f"  {name:<32} {time:>12}   {against}")


if __name__ == "__main__":
    main()
