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
    from .loading import load
    from .threads import cores

    ffi, lib = load()
    blocks = cols // 32
    weights = ffi.new("int8_t[]", (experts + 1) * rows * cols)
    ffi.buffer(weights)[:] = b"\x01" * len(weights)  # written: untouched pages read as zeros
    scales = ffi.new("uint16_t[]", (experts + 1) * rows * blocks)
    ids = ffi.new("int32_t[]", list(range(1, experts + 1)))
    xq, xd = ffi.new("int8_t[]", cols), ffi.new("float[]", blocks)
    y = ffi.new("float[]", experts * rows)
    counts = sorted({1, cores()})
    seconds: dict[int, list[float]] = {count: [] for count in counts}
    for round_ in range(ROUNDS + 1):
        for count in counts:
            lib.strata_set_threads(count)
            start = time.perf_counter()
            lib.strata_matvec_q8_0(weights, scales, xq, xd, y, rows, cols)
            lib.strata_expert_matvec_q8_0(
                weights, scales, ids, xq, xd, y, experts + 1, 1, experts, rows, cols
            )
            if round_:
                seconds[count].append(time.perf_counter() - start)
    return {str(count): statistics.median(times) for count, times in seconds.items()}


if __name__ == "__main__":
    from ..child import answer_json

    rows, cols, experts = map(int, sys.argv[1:4])
    answer_json(lambda: trial(rows, cols, experts))
