"""The prompt GEMM on an NVIDIA GPU through strata's cuBLASLt binding, side by side with
torch.matmul on the same card and the same data: fp16 in, fp32 out, the workload's shape
(N = ffn, K = hidden of the profile) at T = 256 ... 8192. Each arm is timed as a calibration
times it: the median of event-timed batches of launches on inputs uploaded once, each batch
queued behind a long kernel so that the events time the GPU. Also: the fastest solution
cuBLASLt lists for each shape, and whether every listed solution's id rebuilds exactly the
algorithm the library listed.

    python bench/gpu_gemm.py [--repeats N] [--profile FILE]

Needs strata[cuda] installed, the NVIDIA driver, cuBLASLt (STRATA_CUBLASLT_LIBRARY names
it, else libcublasLt.so.13/.12/.11 through the loader) and PyTorch with CUDA.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

import torch

from strata_core.api.manager import PluginManager
from strata_core.blas.gemm import GemmShape
from strata_core.blas.open import open_blas
from strata_core.cuda.driver import CudaDriver, candidate_paths
from strata_core.gpu.library import GpuKernels, start_check
from strata_core.plan import profile
from strata_core.run.card_tuning import BATCH, HOLD_BYTES, CardRunner, gemm_close
from strata_core.tuning.libraries import LIBRARIES
from strata_core.tuning.tables import DEFAULT

TOKENS = (256, 512, 1024, 2048, 4096, 8192)
HOLD_CYCLES = 2_000_000


def torch_us(call, repeats: int) -> float:
    call()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(HOLD_CYCLES)
        start.record()
        for _ in range(BATCH):
            call()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3 / BATCH)
    return statistics.median(times)


def torch_gemm(x: torch.Tensor, w: torch.Tensor):
    """x @ w.T with fp32 output where this PyTorch can write it (torch.mm's out_dtype), else
    fp16 output; and which it is."""
    try:
        torch.mm(x[:1], w.t(), out_dtype=torch.float32)
        return (lambda: torch.mm(x, w.t(), out_dtype=torch.float32)), "fp32 out"
    except (TypeError, RuntimeError):
        return (lambda: torch.matmul(x, w.t())), "fp16 out"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--profile", type=Path)
    args = parser.parse_args()
    workload = profile.load(args.profile)
    torch.cuda.init()
    driver = CudaDriver(candidate_paths(os.environ))
    card = driver.card(0)
    library = PluginManager.discover({}).kernel_libraries()["cuda"]
    gpu = GpuKernels(driver, start_check("cuda", library, card), card, hold_bytes=HOLD_BYTES)
    blas = open_blas("cublaslt", LIBRARIES["cublaslt"].files(os.environ), driver)
    print(
        f"{card.name} ({card.gfx}); cuBLASLt {blas.version} ({blas.path}); PyTorch "
        f"{torch.__version__}; N={workload.ffn} K={workload.hidden}; medians of {args.repeats} "
        f"batches of {BATCH}, held"
    )
    print(
        f"  {'T':>5} {'strata default':>15} {'TFLOP/s':>8} {'torch':>10} {'torch/strata':>13}"
        f" {'best listed':>12} {'listed':>7} {'ids exact':>10}"
    )
    for tokens in TOKENS:
        shape = GemmShape(tokens, workload.ffn, workload.hidden)
        runner = CardRunner(gpu, blas, shape, seed=tokens)
        ours = runner(DEFAULT)
        x = torch.from_numpy(runner.x).cuda()
        w = torch.from_numpy(runner.w).cuda()
        call, kind = torch_gemm(x, w)
        theirs = call().float().cpu().numpy()
        assert gemm_close(ours, theirs), f"T={tokens}: strata's product differs from torch's"
        solutions = blas.solutions(shape)
        problem = blas.problems[shape]
        exact = sum(
            blas.build(shape, s) is not None
            and bytes(blas.ffi.buffer(blas.build(shape, s)))
            == bytes(blas.ffi.buffer(problem.listed[s]))
            for s in solutions[1:]
        )
        timed = {
            s: statistics.median(runner.seconds(s) * 1e6 for _ in range(args.repeats))
            for s in solutions
        }
        default_us = timed[DEFAULT]
        best = min(timed, key=timed.__getitem__)
        torch_time = torch_us(call, args.repeats)
        tflops = 2 * tokens * shape.n * shape.k / default_us / 1e6
        print(
            f"  {tokens:>5} {default_us:>12.1f} us {tflops:>8.1f} {torch_time:>7.1f} us "
            f"{torch_time / default_us:>12.3f}x {default_us / timed[best]:>11.3f}x "
            f"{len(solutions):>7} {exact:>6}/{len(solutions) - 1}"
        )
        runner.close()
        del x, w
    print(f"  torch: torch.mm {kind}; best listed: the default's time over the fastest's")
    blas.close()
    gpu.close()


if __name__ == "__main__":
    main()
