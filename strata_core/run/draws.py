"""Random inputs of a workload, drawn fast: an array a piece at a time on every core, each
piece from its own SFC64 stream of the seed (a piece stays in the CPU's cache while it is
drawn and shaped), so that the same seed gives the same values whatever the number of cores
(a GPU run's child and the parent that checks it draw the same inputs). A large array's
memory is made in one call (MAP_POPULATE) rather than a fault a page: a GiB of the memory
numpy allocates (advised as huge pages) took 1.4-2.0 s to first touch on the 2-core VM here,
populated 0.4 s."""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: bytes of an array that one stream draws
PIECE_BYTES = 1 << 22
#: the size from which an array's memory is populated in one call
POPULATED_BYTES = 1 << 24


def empty(size: int, dtype: type[np.generic]) -> np.ndarray:
    """A flat array of ``size`` values, its memory populated where it is large (and the
    platform can)."""
    nbytes = size * np.dtype(dtype).itemsize
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if nbytes < POPULATED_BYTES or not populate:
        return np.empty(size, dtype)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate
    return np.frombuffer(mmap.mmap(-1, nbytes, flags=flags), dtype)


def _in_pieces(
    rng: np.random.Generator,
    out: np.ndarray,
    draw: Callable[[np.random.Generator, np.ndarray], None],
) -> np.ndarray:
    """Fill the flat array ``out`` piece by piece, each piece drawn by ``draw`` from a
    generator of its own, on a thread per core."""
    step = max(1, PIECE_BYTES // out.itemsize)
    starts = range(0, out.size, step)
    seeds = np.random.SeedSequence(int(rng.integers(1 << 63))).spawn(len(starts))

    def piece(n: int) -> None:
        start = starts[n]
        draw(np.random.Generator(np.random.SFC64(seeds[n])), out[start : start + step])

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        list(pool.map(piece, range(len(starts))))
    return out


def _bits(generator: np.random.Generator, piece: np.ndarray) -> None:
    """Fill ``piece`` with the generator's raw bits."""
    words = generator.bit_generator.random_raw(-(-piece.nbytes // 8))
    piece.view(np.uint8)[:] = np.asarray(words, np.uint64).view(np.uint8)[: piece.nbytes]


def q8_values(rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` int8 values of Q8_0 weights: raw random bits, -128 taken to -127 (Q8_0 never
    gives it)."""

    def draw(generator: np.random.Generator, piece: np.ndarray) -> None:
        _bits(generator, piece)
        np.bitwise_xor(piece, (piece == -128).view(np.int8), out=piece)  # 0x80 -> 0x81

    return _in_pieces(rng, empty(size, np.int8), draw)


#: the scales Q8_0 blocks of unit-normal weights get (0.01 to 0.03)
SCALE_LEVELS = np.linspace(0.01, 0.03, 1024).astype(np.float16)


def q8_scales(rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` float16 scales of Q8_0 blocks, each one of SCALE_LEVELS."""

    def draw(generator: np.random.Generator, piece: np.ndarray) -> None:
        _bits(generator, piece)
        np.take(SCALE_LEVELS, piece.view(np.uint16) & 1023, out=piece)

    return _in_pieces(rng, empty(size, np.float16), draw)


def standard_normal(rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
    """Standard normal float32 values of ``shape``."""

    def draw(generator: np.random.Generator, piece: np.ndarray) -> None:
        generator.standard_normal(out=piece, dtype=np.float32)

    size = int(np.prod(shape))
    return _in_pieces(rng, empty(size, np.float32), draw).reshape(shape)
