"""The kernel library on an NVIDIA GPU, side by side with PyTorch on the same card: each kernel's
median time over event-timed repeats (kernel only: inputs are uploaded before the events),
matvec_q8_0 against the card's read bandwidth (the library's read kernel, and beside it a
device-to-device copy through PyTorch counting the bytes read), top-k against torch.topk,
the router against torch.topk + softmax. Every result is checked against the host backend
first.

    python bench/gpu_kernels.py [--repeats N]

Needs strata[cuda] installed, the NVIDIA driver, and PyTorch with CUDA.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
import torch

from strata_core.cuda.driver import CudaDriver, candidate_paths
from strata_core.hip import abi
from strata_core.hip.library import GpuKernels, start_check
from strata_core.host import q8, reference
from strata_core.host.library import HostLibrary
from strata_core.manager import PluginManager

GB = 1e9
BATCH = 100


def torch_ms(call, repeats: int) -> float:
    call()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def back_to_back_us(kernels: GpuKernels, arrays: dict, scalars: dict, grid: int) -> float:
    """Per launch of the router, BATCH launches on resident buffers between two events: the
    launch overhead that one event-timed launch cannot separate is spread over the batch."""
    rt = kernels.runtime
    with kernels._allocations() as take:
        pointers = {name: take(array.nbytes) for name, array in arrays.items()}
        for name, array in arrays.items():
            rt.upload(pointers[name], array, kernels.stream)
        addresses = {name: rt.address(pointer) for name, pointer in pointers.items()}
        args = abi.pack("router_topk", addresses | scalars, kernels.code.kernel("router_topk"))
        batch = [("router_topk", grid, args)] * BATCH
        times = [kernels._launch_timed(batch, []) / BATCH * 1e6 for _ in range(5)]
    return statistics.median(times)


def ours_ms(kernels: GpuKernels, call, repeats: int) -> tuple[object, float]:
    result = call()
    times = []
    for _ in range(repeats):
        call()
        times.append(kernels.seconds * 1e3)
    return result, statistics.median(times)


def device_copy(repeats: int) -> tuple[float, float]:
    """A 4 GiB device-to-device copy: its time, and the bytes it read per second."""
    buffer = torch.empty(4 << 30, dtype=torch.uint8, device="cuda")
    copy = torch.empty_like(buffer)
    ms = torch_ms(lambda: copy.copy_(buffer), repeats)
    return ms, buffer.numel() / (ms / 1e3) / GB


def topk_row(kernels: GpuKernels, scores: np.ndarray, k: int, repeats: int) -> tuple:
    (ids, _), ms = ours_ms(kernels, lambda: kernels.topk(scores, k, "radix"), repeats)
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
    kernels = GpuKernels(driver, start_check("cuda", library, card), card)
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
    y, ms = ours_ms(kernels, lambda: kernels.matvec_q8_0(qs, d, xq, xd), repeats)
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
    (ids, weights), ms = ours_ms(kernels, lambda: kernels.router_topk(logits, 8, "fast"), repeats)
    want_ids, want_weights = reference.router_topk(logits, 8)
    assert np.array_equal(ids, want_ids) and np.allclose(weights, want_weights, rtol=1e-5)
    on_card = torch.from_numpy(logits).cuda()

    def torch_router():
        values, chosen = torch.topk(on_card, 8, dim=1)
        return torch.softmax(values, dim=1), chosen

    theirs = torch_ms(torch_router, repeats)
    rows.append(("router_topk 512x128 k=8", f"{ms * 1e3:.1f} us",
                 f"torch.topk+softmax {theirs * 1e3:.1f} us: {theirs / ms:.2f}x"))  # fmt: skip
    arrays = {"logits": logits, "ids": np.empty((512, 8), np.int32),
              "weights": np.empty((512, 8), np.float32)}  # fmt: skip
    scalars = {"tokens": 512, "experts": 128, "k": 8, "variant": 0}
    ours_us = back_to_back_us(kernels, arrays, scalars, grid=512 // 8)
    theirs_us = torch_ms(lambda: [torch_router() for _ in range(BATCH)], 5) / BATCH * 1e3
    rows.append((f"  the same, {BATCH} back to back", f"{ours_us:.1f} us",
                 f"torch.topk+softmax {theirs_us:.1f} us: {theirs_us / ours_us:.2f}x"))  # fmt: skip
    kernels.close()
    print(f"{card.name} ({card.gfx}), {kernels.code.path.name}; medians of {repeats}")
    for name, time, against in rows:
        print(f"  {name:<32} {time:>12}   {against}")


if __name__ == "__main__":
    main()
