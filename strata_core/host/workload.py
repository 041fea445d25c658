"""The workload `strata-core run` runs on a backend's kernels: decode and prompt steps of a
model profile, every kernel's output checked against a reference, with speeds. On the host
the reference is numpy (strata_core.host.reference); on a GPU it is the host backend."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Protocol, TextIO, TypeVar

import attrs
import numpy as np

from ..errors import StrataError
from ..records import KernelChoice, Workload
from ..tuning.dispatch import TunedDispatch
from . import q8, reference
from .gemm import PromptGemm
from .library import HostLibrary

GB = 1e9
BANDWIDTH_BUFFER = 256 << 20
R = TypeVar("R")


class Kernels(Protocol):
    """The operations a workload checks, with HostLibrary's signatures."""

    def matvec_q8_0(self, qs, d, xq, xd) -> np.ndarray: ...
    def router_topk(self, logits, k: int, *variant: str) -> tuple[np.ndarray, np.ndarray]: ...
    def topk(self, scores, k: int, *variant: str) -> tuple[np.ndarray, np.ndarray]: ...


@attrs.frozen
class Backend:
    """What runs the workload: the kernels under test, the prompt GEMM over a weight matrix,
    the clock of one call, and what their results are checked against."""

    kernels: Kernels
    gemm: Callable[[np.ndarray], Any]
    clock: Callable[[Callable[[], Any]], tuple[Any, float]]
    reference: Any
    reference_name: str
    trust: str


def wall_clock(call: Callable[[], R]) -> tuple[R, float]:
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


def host_backend(lib: HostLibrary) -> Backend:
    return Backend(
        lib, PromptGemm, wall_clock, reference, "the numpy reference", "the host kernel library"
    )


@attrs.define
class KernelReport:
    op: str
    variant: str
    reason: str
    unit: str
    seconds: list[float] = attrs.field(factory=list)
    amount: float = 0.0  # of `unit` per call
    bytes_read: float = 0.0  # per call
    checked: int = 0

    def as_dict(self, read_gbs: float) -> dict:
        median = statistics.median(self.seconds)
        bandwidth = self.bytes_read / median / GB
        return {
            "variant": self.variant,
            "reason": self.reason,
            "calls": len(self.seconds),
            "checked": self.checked,
            "median_ms": round(median * 1e3, 4),
            "throughput": round(self.amount / median, 2),
            "unit": self.unit,
            "bandwidth_gbs": round(bandwidth, 2),
            "bandwidth_of_read": round(bandwidth / read_gbs, 3) if read_gbs else None,
        }


def read_bandwidth(lib: HostLibrary, repeats: int = 5) -> float:
    """GB/s of all threads reading a buffer larger than the caches."""
    buffer = np.ones(BANDWIDTH_BUFFER, dtype=np.uint8)
    lib.read_bytes(buffer)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        lib.read_bytes(buffer)
        times.append(time.perf_counter() - start)
    return buffer.nbytes / statistics.median(times) / GB


def run(
    backend: Backend,
    workload: Workload,
    kernels: Mapping[str, KernelChoice],
    gemm_dispatch: TunedDispatch,
    seed: int = 0,
    progress: TextIO | None = None,
) -> dict[str, KernelReport]:
    rng = np.random.default_rng(seed)
    w = workload
    lib, ref = backend.kernels, backend.reference

    def timed(report: KernelReport, call: Callable[..., R], *args: Any) -> R:
        result, seconds = backend.clock(partial(call, *args))
        report.seconds.append(seconds)
        return result

    def mismatch(op: str, step: str) -> StrataError:
        return StrataError(
            f"{op} gave a wrong result in {step}: it differs from {backend.reference_name}; "
            f"{backend.trust} is not to be trusted here"
        )

    def report(name: str, op: str, unit: str) -> KernelReport:
        return KernelReport(name, kernels[op].variant, kernels[op].reason, unit)

    reports = {
        "matvec_q8_0": report("matvec_q8_0", "matvec_q8_0", "GB/s"),
        "router_topk": report("router_topk", "router_topk", "tokens/s"),
        "router_topk_prompt": report("router_topk_prompt", "router_topk", "tokens/s"),
        "topk": report("topk", "topk", "cells/s"),
        "prompt_gemm": report("prompt_gemm", "prompt_gemm", "GFLOP/s"),
    }
    qs, d = q8.quantize_rows(rng.standard_normal((w.ffn, w.hidden), dtype=np.float32))
    gemm = backend.gemm(rng.standard_normal((w.hidden, w.ffn), dtype=np.float32))
    router_variant = kernels["router_topk"].variant
    topk_variant = kernels["topk"].variant
    total = w.decode_steps + w.prompt_steps

    def topk_step(step: str) -> None:
        scores = rng.standard_normal(w.context_cells, dtype=np.float32)
        ids, _ = timed(reports["topk"], lib.topk, scores, w.cells_kept, topk_variant)
        if not np.array_equal(ids, ref.topk(scores, w.cells_kept)[0]):
            raise mismatch("topk", step)
        reports["topk"].checked += 1

    def router_step(router: KernelReport, tokens: int, step: str) -> None:
        logits = rng.standard_normal((tokens, w.experts), dtype=np.float32)
        ids, weights = timed(router, lib.router_topk, logits, w.experts_per_token, router_variant)
        want_ids, want_weights = ref.router_topk(logits, w.experts_per_token)
        if not (
            np.array_equal(ids, want_ids)
            and np.allclose(weights, want_weights, rtol=1e-5, atol=1e-7)
        ):
            raise mismatch("router_topk", step)
        router.checked += 1
        router.amount = tokens
        router.bytes_read = tokens * w.experts * 4

    for step in range(w.decode_steps):
        name = f"decode step {step + 1}"
        xq, xd = q8.quantize_vector(rng.standard_normal(w.hidden, dtype=np.float32))
        y = timed(reports["matvec_q8_0"], lib.matvec_q8_0, qs, d, xq, xd)
        want = ref.matvec_q8_0(qs, d, xq, xd)
        if not np.allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max()):
            raise mismatch("matvec_q8_0", name)
        reports["matvec_q8_0"].checked += 1
        router_step(reports["router_topk"], 1, name)
        topk_step(name)
        _progress(progress, step + 1, total)
    for step in range(w.prompt_steps):
        name = f"prompt step {step + 1}"
        x = rng.standard_normal((w.prompt_tokens, w.hidden), dtype=np.float32)
        key = (w.prompt_tokens, w.ffn, w.hidden, "f32", "prompt")
        out = timed(reports["prompt_gemm"], gemm_dispatch.launch, key, partial(gemm, x))
        want, tolerance = gemm.expected(x), gemm.tolerance
        if not np.allclose(out, want, rtol=tolerance, atol=tolerance * np.abs(want).max()):
            raise mismatch("prompt_gemm", name)
        reports["prompt_gemm"].checked += 1
        router_step(reports["router_topk_prompt"], w.prompt_tokens, name)
        topk_step(name)
        _progress(progress, w.decode_steps + step + 1, total)
    matvec = reports["matvec_q8_0"]
    matvec.bytes_read = matvec.amount = qs.nbytes + d.nbytes
    matvec.amount /= GB
    reports["topk"].amount = w.context_cells
    reports["topk"].bytes_read = w.context_cells * 4
    reports["prompt_gemm"].amount = 2.0 * w.prompt_tokens * w.hidden * w.ffn / GB
    reports["prompt_gemm"].bytes_read = 4.0 * (w.prompt_tokens * w.hidden + w.hidden * w.ffn)
    if progress is not None and progress.isatty():
        print(file=progress)
    return reports


def _progress(stream: TextIO | None, done: int, total: int) -> None:
    if stream is not None and stream.isatty():
        print(f"\rrun: step {done}/{total}", end="", file=stream, flush=True)
