"""The host threads' trial: ``python -m strata_core.host.thread_trial ROWS COLS EXPERTS``
prints, as JSON, the median seconds of a decode step (a ROWS x COLS Q8_0 matvec and a
one-token expert step over EXPERTS such matrices) on one thread and on every core, the
counts alternating, under the OpenMP wait policy of its environment
(strata_core.host.threads reads it)."""

from __future__ import annotations

import statistics
import sys
import time

#: rounds of the trial; each times every thread count once, after one round that warms up
ROUNDS = 7


def trial(rows: int, cols: int, experts: int) -> dict[str, float]:
    import numpy as np

    from .library import HostLibrary
    from .threads import cores

    lib = HostLibrary()
    blocks = cols // 32
    weights = np.ones((experts + 1, rows, cols), np.int8)
    scales = np.ones((experts + 1, rows, blocks), np.float16)
    ids = np.arange(1, experts + 1, dtype=np.int32)[None]
    xq, xd = np.ones((1, cols), np.int8), np.ones((1, blocks), np.float32)
    counts = sorted({1, cores()})
    seconds: dict[int, list[float]] = {count: [] for count in counts}
    for round_ in range(ROUNDS + 1):
        for count in counts:
            lib.set_threads(count)
            start = time.perf_counter()
            lib.matvec_q8_0(weights[0], scales[0], xq[0], xd[0])
            lib.expert_matvec_q8_0(weights, scales, ids, xq, xd)
            if round_:
                seconds[count].append(time.perf_counter() - start)
    return {str(count): statistics.median(times) for count, times in seconds.items()}


if __name__ == "__main__":
    from ..child import answer_json

    rows, cols, experts = map(int, sys.argv[1:4])
    answer_json(lambda: trial(rows, cols, experts))
