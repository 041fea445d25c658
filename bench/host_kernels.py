"""Host kernel speeds against this machine's limits, numpy and (given a build) ggml's CPU
backend, side by side in one run.

    uv run python bench/host_kernels.py [--threads N] [--isa NAME] [--ggml DIR] [--json FILE]

--threads: threads for the host kernels and for ggml alike (default: every core).
--isa: run the host kernels with this instruction set (one of platform.KERNEL_ISAS, at most
what the CPU has), to compare their paths on one machine.
--ggml: a local shared build of ggml-org/ggml to compare against. The bench never downloads
it; build it yourself, for example (the issue 21 numbers are from commit d99724f):

    git clone https://github.com/ggml-org/ggml /tmp/ggml-src
    git -C /tmp/ggml-src checkout d99724f      # or any later commit
    cmake -S /tmp/ggml-src -B /tmp/ggml-build -DCMAKE_BUILD_TYPE=Release \\
        -DGGML_NATIVE=ON -DGGML_LLAMAFILE=ON -DBUILD_SHARED_LIBS=ON \\
        -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF
    make -C /tmp/ggml-build -j"$(nproc)"
    uv run python bench/host_kernels.py --ggml /tmp/ggml-build

--json: also write the figures as JSON (bench/bench_json.py), the CPU, its ISA, the date and
the commit (--commit names it where the tree is not a git checkout); bench/results_page.py
draws docs/results.md from such files.

Each case runs on the same inputs on every side, the calls alternating round by round, and
the results are checked equal before anything is timed: matvec_q8_0 against ggml's mul_mat of
the same Q8_0 weights by the F32 vector whose Q8_0 quantization is exactly strata's activation;
top-k against ggml_top_k (as sets of ids, since ggml's order is none); the router against the
MoE gating llama.cpp builds (soft_max, top_k, get_rows, normalised). Medians are reported,
with the load average: both libraries' threads wait for each other spinning, so on a machine
whose cores are busy with other work, threaded timings collapse (compare with --threads 1).

Goals: matvec_q8_0 at 85% or more of the measured DRAM read bandwidth on a 512 MB matrix with
every core (issue 5), and ahead of ggml (issue 21); topk of 256 out of 524,288 at least 2.5x
faster than numpy's argpartition (5), and of 256 and of 1024 at least 2x ggml_top_k (21);
router_topk for 512 tokens, 128 experts, k=8 at least 10x faster than numpy (5) and 5x ggml's
routing (21); the prompt GEMM within 10% of numpy's own matmul (5).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import bench_json
import numpy as np
from ggml_peer import Ggml, NotAGgmlBuild

from strata_core.errors import StrataError
from strata_core.host import reference
from strata_core.host.gemm import PromptGemm
from strata_core.host.library import HostLibrary
from strata_core.host.platform import KERNEL_ISAS, blas_version, cpu_name, isa_level
from strata_core.host.topk_bands import host_topk_choice
from strata_core.q8 import BLOCK

MB = 1 << 20
#: how close ggml's matvec must come to strata's, as a share of the largest |y|: both sum the
#: same exact block dot products in float32, in different orders
MATVEC_CLOSE = 1e-5
ROUTER_WEIGHTS_CLOSE = 1e-5


Calls = dict[str, Callable[[], object]]

#: by kernel, the call each peer side times, as the JSON names it
PEER_CALLS = {
    "matvec_q8_0": {"ggml": "ggml_mul_mat, Q8_0 weights by an F32 vector"},
    "topk": {"numpy": "np.argpartition", "ggml": "ggml_top_k"},
    "router_topk": {
        "numpy": "argpartition, sort, softmax",
        "ggml": "llama.cpp's MoE gating: soft_max, top_k, get_rows, normalised",
    },
    "prompt_gemm": {"numpy": "numpy matmul"},
}


class Disagree(Exception):
    """strata and its peer computed different results; the message says where."""


def side_by_side(calls: Calls, repeats: int) -> dict[str, float]:
    """Median seconds of each call, the calls alternating so that drift hits all alike."""
    for call in calls.values():
        call()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(spent) for name, spent in times.items()}


def vs_ggml(ours: float, ggml: float) -> str:
    ratio = ours / ggml
    if f"{ratio:.2f}" == "1.00":
        return "strata/ggml 1.00, even"
    faster = f"{1 / ratio:.2f}x faster" if ratio < 1 else f"{ratio:.2f}x slower"
    return f"strata/ggml {ratio:.2f}, {faster}"


def activation(rng: np.random.Generator, cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(xq, xd, x): a Q8_0 activation whose every block holds 127 and whose scales are fp16
    values, and the F32 vector it encodes, which ggml quantizes back to exactly xq and xd."""
    xq = rng.integers(-127, 128, size=cols, dtype=np.int8)
    xq[::BLOCK] = 127
    xd = (rng.random(cols // BLOCK, dtype=np.float32) + 0.5).astype(np.float16).astype(np.float32)
    x = (xq.reshape(-1, BLOCK) * xd[:, None]).reshape(-1).astype(np.float32)
    return xq, xd, x


def check_matvec(ours: np.ndarray, theirs: np.ndarray) -> str:
    worst = float(np.abs(ours - theirs).max())
    scale = float(np.abs(ours).max())
    if worst > MATVEC_CLOSE * scale:
        raise Disagree(f"largest difference {worst:.3g} of a largest |y| of {scale:.3g}")
    return f"equal within {worst / scale:.1e} of the largest |y|"


def check_top(
    ids: np.ndarray, values: np.ndarray, their_ids: np.ndarray, scores: np.ndarray
) -> str:
    """Same k picked (either of a tie at the k-th value), and strata's values are the scores at
    ggml's ids sorted descending."""
    theirs = np.sort(scores[their_ids])[::-1]
    if not np.array_equal(values, theirs):
        raise Disagree("the values picked differ")
    differ = np.setxor1d(ids, their_ids)
    if differ.size and not np.all(scores[differ] == theirs[-1]):
        raise Disagree(f"{differ.size} ids differ")
    return "same set of ids, same values in descending order"


def check_router(ours: tuple[np.ndarray, np.ndarray], theirs: tuple[np.ndarray, np.ndarray]) -> str:
    """Per token the same expert ids (as a set) with the same weight each."""
    (ids, weights), (their_ids, their_weights) = ours, theirs
    order, their_order = np.argsort(ids, axis=1), np.argsort(their_ids, axis=1)
    if not np.array_equal(
        np.take_along_axis(ids, order, 1), np.take_along_axis(their_ids, their_order, 1)
    ):
        raise Disagree("the experts picked differ")
    mine = np.take_along_axis(weights, order, 1)
    other = np.take_along_axis(their_weights, their_order, 1)
    if not np.allclose(mine, other, rtol=ROUTER_WEIGHTS_CLOSE, atol=0):
        raise Disagree(f"weights differ by up to {np.abs(mine - other).max():.3g}")
    return f"same experts per token, weights equal per expert within rtol {ROUTER_WEIGHTS_CLOSE:g}"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=0, help="threads on every side (0: all)")
    parser.add_argument("--isa", help="instruction set of the host kernels (default: the best)")
    parser.add_argument("--ggml", type=Path, metavar="DIR", help="a local shared build of ggml")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures here")
    parser.add_argument("--commit", help="the commit measured (default: the checkout's)")
    args = parser.parse_args(argv)
    if args.threads < 0:
        parser.error("--threads must be 0 (every core) or more")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    lib = HostLibrary()
    if args.isa:
        isas = [name for name, _ in KERNEL_ISAS]
        if args.isa not in isas:
            print(f"host_kernels: --isa {args.isa}: not one of {', '.join(isas)}", file=sys.stderr)
            return 2
        try:
            lib.set_isa(args.isa)
        except StrataError as error:
            print(f"host_kernels: --isa {args.isa}: {error}", file=sys.stderr)
            return 2
    threads = lib.set_threads(args.threads)
    ggml = None
    if args.ggml:
        try:
            ggml = Ggml(args.ggml, threads)
        except NotAGgmlBuild as error:
            print(f"host_kernels: --ggml: {error}", file=sys.stderr)
            return 2
    load_at_start = os.getloadavg()[0]
    print(f"host library {lib.path.name}: {lib.isa}, {threads_named(threads)}; {load()}")
    if ggml:
        print(ggml.describe())
    bench = Bench(lib, ggml)
    try:
        bench.matvec_against_dram(16384, 32768)  # 512 MiB of int8 weights
        if ggml:
            bench.matvec(4096, 4096)
        for k in (256, 1024):
            bench.topk(524288, k)
        bench.router(512, 128, 8)
    except Disagree as error:
        print(f"host_kernels: strata and ggml disagree, not timed: {error}", file=sys.stderr)
        return 1
    bench.prompt_gemm()
    print(f"at the end: {load()}")
    if args.json:
        machine = cpu_machine(lib, threads, ggml, (load_at_start, os.getloadavg()[0]))
        read = {"what": "DRAM read, 1 GiB", "gbs": bench.dram_gbs}
        commit = args.commit or bench_json.git_commit()
        answer = bench_json.record("host_kernels", commit, machine, read, bench.cases)
        bench_json.write(args.json, answer)
        print(f"wrote {args.json}")
    if ggml:
        print("\n| case | strata | ggml | strata/ggml |\n| --- | --- | --- | --- |")
        for case, ours, theirs in bench.against_ggml:
            print(f"| {case} | {duration(ours)} | {duration(theirs)} | {vs_ggml(ours, theirs)} |")
    return 0


def cpu_machine(
    lib: HostLibrary, threads: int, ggml: Ggml | None, load_average: tuple[float, float]
) -> bench_json.Record:
    """The CPU as the JSON record names it, the load average at the start and the end."""
    return {
        "kind": "cpu",
        "name": cpu_name(),
        "cpuid": cpuid(),
        "isa_level": isa_level(),
        "kernels_isa": lib.isa,
        "cores": os.cpu_count(),
        "threads": threads,
        "numpy": blas_version(),
        "ggml": ggml.describe() if ggml else None,
        "load_average": list(load_average),
    }


def cpuid(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """family, model and stepping: a CPU that a hypervisor names only "AMD EPYC" is told apart
    by them."""
    try:
        lines = cpuinfo.read_text().splitlines()
    except OSError:
        return None
    pairs = (line.split(":", 1) for line in lines if ":" in line)
    fields = {key.strip(): value.strip() for key, value in pairs}
    parts = [f"{key} {fields[key]}" for key in ("cpu family", "model", "stepping") if key in fields]
    return ", ".join(parts) or None


def threads_named(threads: int) -> str:
    return f"{threads} thread" + ("" if threads == 1 else "s")


def load() -> str:
    """Threaded timings mean little on a machine whose other work wants its cores: say how
    busy it was."""
    busy, cores = os.getloadavg()[0], os.cpu_count() or 1
    warning = " (busy: threaded timings are not meaningful)" if busy >= cores else ""
    return f"load average {busy:.1f} on {cores} cores{warning}"


def duration(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} us"


class Bench:
    """The cases, each on one set of inputs for every side; the medians against ggml kept."""

    def __init__(self, lib: HostLibrary, ggml: Ggml | None) -> None:
        self.lib, self.ggml = lib, ggml
        self.rng = np.random.default_rng(0)
        self.against_ggml: list[tuple[str, float, float]] = []
        self.cases: list[bench_json.Record] = []
        self.dram_gbs: float | None = None

    def compare(self, case: str, calls: Calls, repeats: int) -> dict[str, float]:
        times = side_by_side(calls, repeats)
        if "ggml" in times:
            self.against_ggml.append((case, times["strata"], times["ggml"]))
        return times

    def record(
        self,
        kernel: str,
        shape: str,
        times: dict[str, float],
        nbytes: int | None,
        variant: str | None = None,
    ) -> None:
        """The case for --json: strata's median and each peer's, every side over the same
        ``nbytes`` (None where the case is not a read: the GEMM)."""
        peers = [
            bench_json.peer(side, call, times[side], nbytes, self.dram_gbs)
            for side, call in PEER_CALLS[kernel].items()
            if side in times
        ]
        self.cases.append(bench_json.case(
            kernel, shape, times["strata"], variant=variant, nbytes=nbytes,
            read_gbs=self.dram_gbs, peers=peers,
        ))  # fmt: skip

    def ggml_part(self, times: dict[str, float], name: str) -> str:
        if "ggml" not in times:
            return ""
        return f"; {name} {duration(times['ggml'])} ({vs_ggml(times['strata'], times['ggml'])})"

    def weights(self, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
        qs = self.rng.integers(-127, 128, size=(rows, cols), dtype=np.int8)
        d = self.rng.random((rows, cols // BLOCK), dtype=np.float32).astype(np.float16)
        return qs, d

    def matvec_calls(self, rows: int, cols: int) -> Calls:
        """strata's matvec_q8_0 and, given ggml, ggml's, their results checked equal."""
        qs, d = self.weights(rows, cols)
        xq, xd, x = activation(self.rng, cols)
        calls: Calls = {"strata": lambda: self.lib.matvec_q8_0(qs, d, xq, xd)}
        if self.ggml:
            theirs = self.ggml.matvec_q8_0(qs, d, x)
            check = check_matvec(self.lib.matvec_q8_0(qs, d, xq, xd), theirs())
            print(f"matvec_q8_0 {rows}x{cols} against ggml: {check}")
            calls["ggml"] = theirs.run
        return calls

    def matvec_against_dram(self, rows: int, cols: int) -> None:
        buffer = np.ones(1024 * MB, dtype=np.uint8)
        # the read alternating with the matvecs, so that the machine's bandwidth swings hit
        # all alike
        calls = {"read": lambda: self.lib.read_bytes(buffer), **self.matvec_calls(rows, cols)}
        times = self.compare(f"matvec_q8_0 {rows}x{cols}", calls, 15)
        dram = buffer.nbytes / times["read"] / 1e9
        self.dram_gbs = dram
        print(f"DRAM read (1 GiB): {dram:.1f} GB/s")
        bytes_read = rows * cols + rows * cols // BLOCK * 2
        self.record("matvec_q8_0", f"{rows}x{cols}", times, bytes_read, self.lib.isa)
        rate = bytes_read / times["strata"] / 1e9
        print(
            f"matvec_q8_0 {rows}x{cols} ({bytes_read / MB:.0f} MiB): {duration(times['strata'])}, "
            f"{rate:.1f} GB/s = {rate / dram:.0%} of DRAM read" + self.ggml_part(times, "ggml")
        )

    def matvec(self, rows: int, cols: int) -> None:
        times = self.compare(f"matvec_q8_0 {rows}x{cols}", self.matvec_calls(rows, cols), 101)
        nbytes = rows * cols + rows * cols // BLOCK * 2
        self.record("matvec_q8_0", f"{rows}x{cols}", times, nbytes, self.lib.isa)
        print(
            f"matvec_q8_0 {rows}x{cols}: {duration(times['strata'])}"
            + self.ggml_part(times, "ggml")
        )

    def topk(self, cells: int, k: int) -> None:
        """The kernel the host backend's plan runs: its own band for this instruction set."""
        scores = self.rng.standard_normal(cells, dtype=np.float32)
        variant = host_topk_choice({}, self.lib.isa, cells, k, False).variant
        calls: Calls = {
            "strata": lambda: self.lib.topk(scores, k, variant),
            "numpy": lambda: np.argpartition(scores, -k)[-k:],
        }
        if self.ggml:
            theirs = self.ggml.top_k(scores, k)
            check = check_top(*self.lib.topk(scores, k, variant), theirs(), scores)
            print(f"topk {k} of {cells} against ggml: {check}")
            calls["ggml"] = theirs.run
        times = self.compare(f"top {k} of {cells}", calls, 51)
        self.record("topk", f"{k} of {cells}", times, scores.nbytes, variant)
        print(
            f"topk {k} of {cells}: {duration(times['strata'])} "
            f"({variant}); numpy argpartition "
            f"{duration(times['numpy'])} ({times['numpy'] / times['strata']:.1f}x)"
            + self.ggml_part(times, "ggml_top_k")
        )

    def router(self, tokens: int, experts: int, k: int) -> None:
        logits = self.rng.standard_normal((tokens, experts), dtype=np.float32)
        calls: Calls = {
            "strata": lambda: self.lib.router_topk(logits, k),
            "numpy": lambda: reference.router_topk_numpy(logits, k),
        }
        if self.ggml:
            theirs = self.ggml.router(logits, k)
            check = check_router(self.lib.router_topk(logits, k), theirs())
            print(f"router {tokens}x{experts} k={k} against ggml: {check}")
            calls["ggml"] = theirs.run
        times = self.compare(f"router {tokens}x{experts} k={k}", calls, 101)
        self.record("router_topk", f"{tokens}x{experts} k={k}", times, logits.nbytes)
        print(
            f"router_topk {tokens}x{experts} k={k}: {duration(times['strata'])}; numpy "
            f"{duration(times['numpy'])} ({times['numpy'] / times['strata']:.1f}x)"
            + self.ggml_part(times, "ggml top_k routing")
        )

    def prompt_gemm(self) -> None:
        x = self.rng.standard_normal((512, 4096), dtype=np.float32)
        w = self.rng.standard_normal((4096, 4096), dtype=np.float32)
        gemm = PromptGemm(w)
        times = side_by_side({"strata": lambda: gemm(x), "numpy": lambda: x @ w}, 15)
        self.record("prompt_gemm", "512x4096x4096", times, None)
        print(
            f"prompt GEMM 512x4096x4096: {duration(times['strata'])}; numpy matmul "
            f"{duration(times['numpy'])} ({times['strata'] / times['numpy']:.2f}x the time)"
        )


if __name__ == "__main__":
    raise SystemExit(main())
