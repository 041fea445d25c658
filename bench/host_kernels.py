"""Host kernel speeds against this machine's limits and numpy, side by side in one run.

Run: uv run python bench/host_kernels.py
Goals (issue 5): matvec_q8_0 at 85% or more of the measured DRAM read bandwidth on a 512 MB
matrix with both cores; topk of 256 out of 524,288 at least 2.5x faster than numpy's
argpartition; router_topk for 512 tokens, 128 experts, k=8 at least 10x faster than numpy;
the prompt GEMM within 10% of numpy's own matmul.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from strata_core.host import reference
from strata_core.host.gemm import PromptGemm
from strata_core.host.library import HostLibrary

MB = 1 << 20


def side_by_side(first, second, repeats: int) -> tuple[float, float]:
    """Median seconds of each, the two calls alternating so that drift hits both alike."""
    first(), second()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for fn, out in ((first, times[0]), (second, times[1])):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> None:
    lib = HostLibrary()
    threads = lib.set_threads(0)
    rng = np.random.default_rng(0)
    print(f"host library {lib.path.name}: {lib.isa}, {threads} threads")

    rows, cols = 16384, 32768  # 512 MiB of int8 weights
    qs = rng.integers(-127, 128, size=(rows, cols), dtype=np.int8)
    d = rng.random((rows, cols // 32), dtype=np.float32).astype(np.float16)
    xq = rng.integers(-127, 128, size=cols, dtype=np.int8)
    xd = rng.random(cols // 32, dtype=np.float32)
    buffer = np.ones(1024 * MB, dtype=np.uint8)
    # alternating, so that the machine's bandwidth swings hit both alike
    read, mv = side_by_side(
        lambda: lib.read_bytes(buffer), lambda: lib.matvec_q8_0(qs, d, xq, xd), 15
    )
    dram = buffer.nbytes / read / 1e9
    print(f"DRAM read (1 GiB, all threads): {dram:.1f} GB/s")
    bytes_read = qs.nbytes + d.nbytes
    print(
        f"matvec_q8_0 {rows}x{cols} ({bytes_read / MB:.0f} MiB): {mv * 1e3:.1f} ms, "
        f"{bytes_read / mv / 1e9:.1f} GB/s = {bytes_read / mv / 1e9 / dram:.0%} of DRAM read"
    )

    scores = rng.standard_normal(524288, dtype=np.float32)
    ours, numpy_top = side_by_side(
        lambda: lib.topk(scores, 256), lambda: np.argpartition(scores, -256)[-256:], 51
    )
    print(
        f"topk 256 of 524288: {ours * 1e3:.3f} ms; numpy argpartition {numpy_top * 1e3:.3f} ms "
        f"({numpy_top / ours:.1f}x)"
    )

    logits = rng.standard_normal((512, 128), dtype=np.float32)
    ours, numpy_router = side_by_side(
        lambda: lib.router_topk(logits, 8), lambda: reference.router_topk_numpy(logits, 8), 101
    )
    print(
        f"router_topk 512x128 k=8: {ours * 1e6:.1f} us; numpy {numpy_router * 1e6:.1f} us "
        f"({numpy_router / ours:.1f}x)"
    )

    x = rng.standard_normal((512, 4096), dtype=np.float32)
    w = rng.standard_normal((4096, 4096), dtype=np.float32)
    gemm = PromptGemm(w)
    ours, plain = side_by_side(lambda: gemm(x), lambda: x @ w, 15)
    print(
        f"prompt GEMM 512x4096x4096: {ours * 1e3:.1f} ms; numpy matmul {plain * 1e3:.1f} ms "
        f"({ours / plain:.2f}x the time)"
    )


if __name__ == "__main__":
    main()
