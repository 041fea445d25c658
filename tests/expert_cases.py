"""Inputs of the MoE expert step for the tests of its host and GPU kernels: experts' Q8_0
weights, the ids a router could give (or harder ones) and per-token activations."""

import numpy as np

from strata_core import q8

#: (experts, tokens, k, rows, cols, kind): one token and 64, odd sizes, experts shared by
#: tokens, every token on one expert, k = experts, more rows than a GPU workgroup takes
#: (EXPERT_ROWS, 64) and more pairs than it gathers in one round (EXPERT_PAIRS, 1024)
CASES = [
    (8, 1, 2, 70, 96, "router"),
    (8, 64, 2, 37, 160, "router"),
    (6, 64, 1, 33, 64, "one expert"),
    (5, 3, 5, 40, 32, "k = experts"),
    (4, 300, 4, 9, 64, "k = experts"),
]


def make(experts: int, tokens: int, k: int, rows: int, cols: int, kind: str, seed: int = 0):
    """(qs, d, ids, xq, xd) for one case; ids are tokens x k."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((experts * rows, cols), dtype=np.float32)
    qs, d = q8.quantize_rows(w)
    x = rng.standard_normal((tokens, cols), dtype=np.float32)
    xq, xd = q8.quantize_rows(x)
    if kind == "router":
        ids = np.stack([rng.permutation(experts)[:k] for _ in range(tokens)])
    elif kind == "one expert":
        ids = np.tile(rng.permutation(experts)[:k], (tokens, 1))
    else:
        ids = np.stack([rng.permutation(experts) for _ in range(tokens)])
    return (
        qs.reshape(experts, rows, cols),
        d.reshape(experts, rows, cols // q8.BLOCK),
        ids.astype(np.int32),
        xq,
        xd.astype(np.float32),
    )
