"""Where the host's wide top-k overtakes its register kernel (a heap): the band edges of the
host backend's own choice (strata_core/host/topk_bands.py, HOST_TOPK_BANDS), measured on this
CPU for every instruction set it has, not borrowed from the GPU's bands on the page.

Run: uv run python bench/host_topk_bands.py [--isa NAME] [--threads N]
For each k, prints both kernels' times at each n (medians of alternating calls) and the
smallest n from which the wide kernel stays faster; those edges go into HOST_TOPK_BANDS.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from strata_core.errors import StrataError
from strata_core.host.library import HostLibrary
from strata_core.host.platform import KERNEL_ISAS

ISAS = tuple(name for name, _ in reversed(KERNEL_ISAS))
CELLS = (4096, 16384, 32768, 65536, 98304, 131072, 262144, 524288)
KEPT = (8, 64, 256, 1024, 2048)


def alternating(first, second, seconds: float = 0.3) -> tuple[float, float]:
    """Median seconds of each, alternating calls, for about ``seconds`` in all."""
    first(), second()
    times: tuple[list[float], list[float]] = ([], [])
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times[0]) < 7:
        for fn, out in ((first, times[0]), (second, times[1])):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def edges(lib: HostLibrary) -> None:
    rng = np.random.default_rng(0)
    print(f"{lib.isa}: register ms / wide ms at each n; the wide kernel from the edge on")
    print("     k  " + " ".join(f"{n:>13}" for n in CELLS) + "   edge")
    for k in KEPT:
        cells, wins = [], []
        for n in CELLS:
            if k > n:
                continue
            scores = rng.standard_normal(n, dtype=np.float32)
            register, wide = alternating(
                lambda s=scores, k=k: lib.topk(s, k, "register"),
                lambda s=scores, k=k: lib.topk(s, k, "wide"),
            )
            cells.append(f"{register * 1e3:6.3f}/{wide * 1e3:6.3f}")
            wins.append((n, wide < register))
        edge = next(
            (n for i, (n, _) in enumerate(wins) if all(w for _, w in wins[i:])), None
        )
        print(f"{k:>6}  " + " ".join(f"{c:>13}" for c in cells) + f"   {edge or 'never'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isa", choices=ISAS, help="one instruction set (default: each)")
    parser.add_argument("--threads", type=int, default=0, help="0: one per core")
    args = parser.parse_args()
    lib = HostLibrary()
    best = lib.isa
    threads = lib.set_threads(args.threads)
    print(f"host library {lib.path.name}, {threads} threads, best instruction set {best}")
    for isa in [args.isa] if args.isa else ISAS:
        try:
            lib.set_isa(isa)
        except StrataError as error:
            if args.isa:
                raise SystemExit(f"host_topk_bands: {error}") from None
            continue
        edges(lib)


if __name__ == "__main__":
    main()
