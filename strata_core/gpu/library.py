"""A plugin's code object for one card: the start check of AMD_HIP.md ("compare each GPU
with the architectures the binary was compiled for and require its wave size"), then the
ABI's operations as numpy calls, launched through the card's runtime (the HIP runtime or the
CUDA driver: strata_core.gpu.runtime) and timed by its events."""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs
import numpy as np

from .. import archdb, bounded
from ..api.records import KernelLibrary
from ..errors import StrataError
from ..q8 import check_expert_shapes, check_matvec_shapes
from . import abi, code_object
from ._abi_ffi import ffi as kernel_abi
from .backends import read_code
from .runtime import Card, GpuRuntime
from .step_graph import RecordedStep

ABI_VERSION = kernel_abi.integer_const("STRATA_KERNEL_ABI_VERSION")
ROUTER_MAX_K = kernel_abi.integer_const("STRATA_ROUTER_MAX_K")
TOPK_MAX_K = kernel_abi.integer_const("STRATA_TOPK_MAX_K")
EXPERT_MAX_EXPERTS = kernel_abi.integer_const("STRATA_EXPERT_MAX_EXPERTS")
#: STRATA_BLOCK and the logical warp of native/gpu/strata_kernels.hip
BLOCK = 256
WARPS_PER_BLOCK = BLOCK // 32
TILE = 16
#: rows of matvec_q8_0 a group of logical warps computes (MATVEC_ROWS of the source)
MATVEC_ROWS = 2
#: logical warps matvec_q8_0 splits its rows along K to reach where the rows are few (H200:
#: 4096 x 4096 and 4096 x 14336 gain 3-6 points of read with 2 warps a group, 14336 x 4096
#: loses 3; 4 warps lose at 4096 x 4096)
MATVEC_WARPS_IN_FLIGHT = 4096
#: the most warps of a row group (the workgroup's warps) and the fewest Q8_0 blocks of a row a
#: part takes (two a lane, MATVEC_UNROLL of the source)
MATVEC_MAX_SPLIT = WARPS_PER_BLOCK
MATVEC_PART_BLOCKS = 64
#: experts the fast router takes with two warps a token (ROUTER_HELD_MAX of the source: four
#: experts a lane of each warp from 129 on)
ROUTER_HALVES_EXPERTS = (4 * 32 + 1, 8 * 32)
#: the most tokens it takes so: past them one warp a token fills the card (H200, 256 experts:
#: two warps 5.7 us against 6.2 at 512 tokens, 9.3 us against 8.6 at 4096)
ROUTER_HALVES_MAX_TOKENS = 1024
#: rows of one expert a workgroup of expert_matvec_q8_0 computes (EXPERT_ROWS of the source)
EXPERT_ROWS = 64
#: cells of a piece, the top-k filter stage's step (TOPK_PIECE of the source a thread)
TOPK_PIECE_CELLS = BLOCK * 16
#: workgroups of the top-k's filter stage over all rows, where the rows have the pieces for them
TOPK_FILTER_BLOCKS = 1024
#: unsigned words a row the top-k keeps in its scratch (TOPK_WORDS of the source)
TOPK_WORDS = 6
#: the read kernel's grid: enough blocks to fill any card, each thread several 16-byte words
READ_WORDS_PER_THREAD = 8
MAX_READ_BLOCKS = 4096
#: The kernel library's variants by the names the plan gives them, as the ABI's codes: top-k's
#: reference radix, register kernel and wide kernel; the GEMM is compiled in (the code object's
#: strata_prompt_gemm_kind).
#: the prompt GEMM kernels the source compiles, one a target
PROMPT_GEMMS = ("wmma", "fma")
VARIANTS: dict[str, dict[str, int]] = {
    "router_topk": {
        "fast": kernel_abi.integer_const("STRATA_ROUTER_FAST"),
        "portable": kernel_abi.integer_const("STRATA_ROUTER_PORTABLE"),
    },
    "topk": {
        "old": kernel_abi.integer_const("STRATA_TOPK_OLD"),
        "register": kernel_abi.integer_const("STRATA_TOPK_REGISTER"),
        "wide": kernel_abi.integer_const("STRATA_TOPK_WIDE"),
    },
}


def variant_code(op: str, variant: str) -> int:
    """The ABI code of a variant the plan chose; StrataError for one the library lacks."""
    codes = VARIANTS[op]
    if variant not in codes:
        raise StrataError(
            f"the GPU kernel library has no {op} variant {variant!r} (it has {', '.join(codes)})"
        )
    return codes[variant]


def runnable_target(library: KernelLibrary, target: str) -> str | None:
    """The library's target whose code runs on a ``target`` device: the same one, or for an
    NVIDIA device the newest PTX at or below its compute capability (the driver compiles
    PTX for any newer device). None when the library has none."""
    if target in library.code_objects:
        return target
    return archdb.newest_ptx_for(library.code_objects, target)


def start_check(plugin: str, library: KernelLibrary, gpu: Card) -> code_object.CodeObject:
    """The code object that runs ``gpu``; a card the build does not cover, a wave size the
    build refuses or a code object the launcher cannot drive stops here with one line."""
    target = runnable_target(library, gpu.gfx)
    if target is None:
        built = ", ".join(library.code_objects) or "no architectures"
        raise StrataError(
            f"{gpu.name} is {gpu.gfx or 'an unknown architecture'}; this build of {plugin} "
            f"was compiled for {built}"
        )
    code = read_code(library.code_objects[target])
    waves = code.wavefront_sizes
    if gpu.wave_size is not None and waves != {gpu.wave_size}:
        build = "/".join(f"wave{w}" for w in sorted(waves))
        raise StrataError(
            f"{plugin} is a {build} build; {gpu.name} ({gpu.gfx}) is wave{gpu.wave_size}: refused"
        )
    problems = launch_problems(code, target)
    if problems:
        raise StrataError(f"{plugin}'s code object cannot be launched: {problems[0]}")
    return code


def launch_problems(code: code_object.CodeObject, target: str) -> list[str]:
    """Why the launcher cannot drive ``code`` as the code object listed for ``target``: another
    target, another kernel ABI or operation list, no prompt GEMM it knows, another argument
    layout, or kernels that do not take STRATA_BLOCK threads. Empty when it can."""
    name = code.path.name
    problems = []
    if code.target != target:
        problems.append(f"{name} is compiled for {code.target}, listed as {target}")
    if code.abi_version != ABI_VERSION:
        problems.append(f"{name} implements kernel ABI {code.abi_version}, not {ABI_VERSION}")
    if code.operations != tuple(abi.OPERATIONS):
        problems.append(f"{name} exports {', '.join(code.operations) or 'no operations'}")
    if code.prompt_gemm not in PROMPT_GEMMS:
        problems.append(f"{name} names no prompt GEMM kernel of {', '.join(PROMPT_GEMMS)}")
    problems += abi.layout_problems(code)
    problems += [
        f"{name}: {k.name} runs at most {k.max_workgroup_size} threads, not {BLOCK}"
        for k in code.kernels.values()
        if k.max_workgroup_size < BLOCK
    ]
    return problems


def topk_launches(queries: int, n: int, variant: str) -> list[tuple[int, int]]:
    """(stage, grid) of each topk launch: the reference radix is stage 2 alone, a workgroup a
    row; the register and the wide kernel sample (a workgroup a row), then filter and select
    (the same number of workgroups a row, each taking every so many pieces of TOPK_PIECE_CELLS;
    the last of a row selects)."""
    if variant == "old":
        return [(2, queries)]
    pieces = -(-n // TOPK_PIECE_CELLS)
    parts = min(pieces, max(1, TOPK_FILTER_BLOCKS // queries))
    return [(0, queries), (1, queries * parts)]


def topk_scratch_bytes(queries: int, k: int) -> int:
    """The top-k's scratch: TOPK_WORDS words a row, then each row's candidates (64-bit items,
    TOPK_CANDIDATES of the source)."""
    return queries * (4 * TOPK_WORDS + 8 * (16 * k + 4096))


#: what a launch's "extra" array says before the argument buffer and before its size (the
#: same in HIP and CUDA)
LAUNCH_BUFFER_POINTER, LAUNCH_BUFFER_SIZE = 0x01, 0x02


class Launch:
    """One launch of a kernel on a stream, its argument buffer laid out once as the runtime's
    "extra" array; each call queues the kernel."""

    def __init__(
        self, runtime: GpuRuntime, function: Any, grid: int, args: bytes, stream: Any, op: str
    ) -> None:
        self.runtime, self.function, self.grid, self.stream, self.op = (
            runtime, function, grid, stream, op
        )  # fmt: skip
        ffi = runtime.ffi
        self._buffer = ffi.from_buffer("char[]", args)  # the extra array points into these
        self._size = ffi.new("size_t *", len(args))
        self.extra = ffi.new(
            "void *[]",
            [
                ffi.cast("void *", LAUNCH_BUFFER_POINTER),
                self._buffer,
                ffi.cast("void *", LAUNCH_BUFFER_SIZE),
                self._size,
                ffi.cast("void *", runtime.launch_end),
            ],
        )

    def __call__(self) -> None:
        self.runtime.launch(self.function, self.grid, BLOCK, self.extra, self.stream, self.op)


@attrs.frozen(eq=False)
class OnCard:
    """A copy of an array in the card's memory, made once by GpuKernels.keep: every operation
    handed it in place of the array reads the copy, until that GpuKernels closes."""

    pointer: Any
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    nbytes: int

    @property
    def ndim(self) -> int:
        return len(self.shape)


def _inputs(op: str, arrays: dict[str, tuple[Any, Any]]) -> dict[str, np.ndarray | OnCard]:
    """An operation's inputs (name: array and its dtype) as they are launched on: a copy on the
    card as it is, else a contiguous array of the dtype to upload."""
    inputs: dict[str, np.ndarray | OnCard] = {}
    for name, (array, dtype) in arrays.items():
        if not isinstance(array, OnCard):
            inputs[name] = np.ascontiguousarray(array, dtype)
        elif array.dtype == np.dtype(dtype):
            inputs[name] = array
        else:
            raise StrataError(
                f"{op}: {name} is kept on the card as {array.dtype}; it takes {np.dtype(dtype)}"
            )
    return inputs


def _blocks(items: int, per_block: int) -> int:
    return max(1, -(-items // per_block))


def matvec_split(rows: int, cols: int, matrices: int = 1) -> int:
    """Warps a row group of matvec_q8_0 (over ``matrices`` of rows x cols one after another,
    as expert_pairs_q8_0 takes them) splits along K (1, 2, 4 or 8): doubled while the groups
    are fewer than MATVEC_WARPS_IN_FLIGHT and each part keeps MATVEC_PART_BLOCKS."""
    groups, blocks = matrices * -(-rows // MATVEC_ROWS), cols // 32
    split = 1
    while (
        split < MATVEC_MAX_SPLIT
        and groups * split < MATVEC_WARPS_IN_FLIGHT
        and blocks >= MATVEC_PART_BLOCKS * split * 2
    ):
        split *= 2
    return split


def router_grid(tokens: int, experts: int, variant: str) -> int:
    """router_topk's workgroups: a thread a token (portable), a warp a token (fast), or two
    warps a token for 129 to 256 experts and few tokens (fast; the kernel reads that from the
    grid)."""
    if variant != "fast":
        return _blocks(tokens, BLOCK)
    halves = ROUTER_HALVES_EXPERTS[0] <= experts <= ROUTER_HALVES_EXPERTS[1]
    warps = 2 if halves and tokens <= ROUTER_HALVES_MAX_TOKENS else 1
    return _blocks(tokens * warps, WARPS_PER_BLOCK)


def matvec_grid(rows: int, cols: int, matrices: int = 1) -> int:
    """matvec_q8_0's workgroups (expert_pairs_q8_0's over ``matrices``): the kernel reads its
    split from their number."""
    split = matvec_split(rows, cols, matrices)
    return _blocks(matrices * -(-rows // MATVEC_ROWS) * split, WARPS_PER_BLOCK)


class GpuKernels:
    """The ABI's operations on one card; ``seconds`` is the last operation's time on the GPU:
    the median of ``repeats`` event-timed launches on inputs uploaded once. With ``hold_bytes``,
    the read kernel over that many bytes runs before each timed launch, so that the launches
    wait queued and the events time the GPU alone, not the host's launch latency."""

    def __init__(
        self,
        runtime: GpuRuntime,
        code: code_object.CodeObject,
        gpu: Card,
        *,
        repeats: int = 1,
        hold_bytes: int = 0,
    ) -> None:
        self.runtime, self.code, self.gpu, self.repeats = runtime, code, gpu, repeats
        runtime.set_device(gpu.index)
        image = bounded.read_bytes(code.path, bounded.KERNEL_CODE)
        self.module = runtime.load_module(image, code.path.name)
        self.functions = {
            op: runtime.function(self.module, code_object.KERNEL_PREFIX + op)
            for op in abi.OPERATIONS
        }
        self.stream = runtime.stream()
        self.start, self.stop = runtime.event(), runtime.event()
        self.seconds = 0.0
        self._held: list[Any] = []
        self._kept: dict[int, tuple[Any, OnCard]] = {}
        self._step: RecordedStep | None = None
        self.hold: list[Callable[[], None]] = (
            [self._kernel(*self._read_launch(hold_bytes, self._held_buffer))] if hold_bytes else []
        )

    def _held_buffer(self, nbytes: int) -> Any:
        """A device buffer freed at close."""
        self._held.append(self.runtime.malloc(nbytes))
        return self._held[-1]

    def keep(self, array: Any) -> OnCard:
        """A copy of ``array`` on the card for every operation to read in its place (weights
        that calls share), held until close; the same array kept again is the same copy."""
        if id(array) in self._kept and self._kept[id(array)][0] is array:
            return self._kept[id(array)][1]
        contiguous = np.ascontiguousarray(array)
        pointer = self._held_buffer(contiguous.nbytes)
        self.runtime.upload(pointer, contiguous, self.stream)
        self.runtime.synchronize(self.stream)
        on_card = OnCard(pointer, contiguous.shape, contiguous.dtype, contiguous.nbytes)
        self._kept[id(array)] = (array, on_card)
        return on_card

    @contextlib.contextmanager
    def recording(self) -> Iterator[RecordedStep]:
        """The operations called in the body run once each and make up the step it gives
        (strata_core.gpu.step_graph), their buffers held by the step until the body ends."""
        step = self._step = RecordedStep(self)
        try:
            yield step
        finally:
            self._step = None
            step.close()

    def close(self) -> None:
        """Release the stream, the events, the copies kept on the card and the module."""
        self.runtime.destroy_event(self.start)
        self.runtime.destroy_event(self.stop)
        self.runtime.destroy_stream(self.stream)
        for pointer in self._held:
            self.runtime.free(pointer)
        self._held.clear()
        self._kept.clear()
        self.runtime.unload_module(self.module)

    @contextlib.contextmanager
    def _allocations(self) -> Iterator[Callable[[int], Any]]:
        """``take(nbytes)`` gives a device buffer; all are freed on leaving (while a step is
        recorded, when it closes)."""
        if self._step is not None:
            yield self._step.take
            return
        taken: list[Any] = []

        def take(nbytes: int) -> Any:
            taken.append(self.runtime.malloc(nbytes))
            return taken[-1]

        try:
            yield take
        finally:
            for pointer in taken:
                self.runtime.free(pointer)

    def _kernel(self, op: str, grid: int, args: bytes) -> Launch:
        """The launch of one of the library's kernels on the stream."""
        return Launch(self.runtime, self.functions[op], grid, args, self.stream, op)

    def launch_timed(
        self, launches: Sequence[Callable[[], None]], downloads: list[tuple[np.ndarray, Any]]
    ) -> float:
        """Queue ``launches`` between the two events, after the hold when there is one, then
        copy ``downloads`` (array, device buffer) back; the seconds between the events."""
        rt = self.runtime
        for launch in self.hold:
            launch()
        rt.record(self.start, self.stream)
        for launch in launches:
            launch()
        rt.record(self.stop, self.stream)
        for array, pointer in downloads:
            rt.download(array, pointer, self.stream)
        rt.synchronize(self.stream)
        return rt.elapsed_s(self.start, self.stop)

    def _timed(
        self, launches: Sequence[Callable[[], None]], downloads: list[tuple[np.ndarray, Any]]
    ) -> float:
        if self._step is not None:
            return self._step.add(launches, downloads)
        return statistics.median(
            self.launch_timed(launches, downloads) for _ in range(self.repeats)
        )

    def run_timed(
        self,
        launch_at: Callable[[dict[str, int]], Callable[[], None]],
        inputs: dict[str, np.ndarray | OnCard],
        outputs: dict[str, np.ndarray],
    ) -> None:
        """Upload ``inputs`` (but those kept on the card), time the launch
        ``launch_at(addresses)`` gives (the buffers' device addresses by name; made before the
        clock starts) as the library's own kernels are timed, and download ``outputs``."""
        rt = self.runtime
        with self._allocations() as take:
            pointers = {name: take(array.nbytes) for name, array in outputs.items()}
            for name, array in inputs.items():
                written = self._step.on_card(array) if self._step else None
                if isinstance(array, OnCard):
                    pointers[name] = array.pointer
                elif written is not None:
                    pointers[name] = written
                else:
                    pointers[name] = take(array.nbytes)
                    rt.upload(pointers[name], array, self.stream)
            launch = launch_at({n: rt.address(p) for n, p in pointers.items()})
            downloads = [(array, pointers[name]) for name, array in outputs.items()]
            self.seconds = self._timed([launch], downloads)

    @property
    def stream_address(self) -> int:
        """The stream as the vendor libraries take it: its handle as an integer."""
        return int(self.runtime.ffi.cast("uintptr_t", self.stream))

    def _run(
        self,
        op: str,
        grid: int,
        inputs: dict[str, np.ndarray | OnCard],
        outputs: dict[str, np.ndarray],
        scalars: dict[str, Any],
    ) -> None:
        kernel = self.code.kernel(op)

        def launch_at(addresses: dict[str, int]) -> Callable[[], None]:
            return self._kernel(op, grid, abi.pack(op, addresses | scalars, kernel))

        self.run_timed(launch_at, inputs, outputs)

    def matvec_q8_0(self, qs: Any, d: Any, xq: Any, xd: Any) -> np.ndarray:
        check_matvec_shapes(qs, d, xq, xd)
        rows, cols = qs.shape
        y = np.empty(rows, dtype=np.float32)
        inputs = _inputs(
            "matvec_q8_0",
            {"qs": (qs, np.int8), "d": (d, np.float16), "xq": (xq, np.int8),
             "xd": (xd, np.float32)},
        )  # fmt: skip
        self._run("matvec_q8_0", matvec_grid(rows, cols), inputs, {"y": y},
                  {"rows": rows, "cols": cols})  # fmt: skip
        return y

    def expert_matvec_q8_0(self, qs: Any, d: Any, ids: Any, xq: Any, xd: Any) -> np.ndarray:
        """The MoE expert step (tokens x k x rows). Where no expert is named twice (one
        token's picks), the pairs' rows run as one matvec (expert_pairs_q8_0); else a
        workgroup set for each distinct expert the ids name, as many as there could be
        (experts, or tokens x k if fewer), reads each once for all the tokens that chose it."""
        check_expert_shapes(qs, d, ids, xq, xd)
        experts, rows, cols = qs.shape
        tokens, k = ids.shape
        if experts > EXPERT_MAX_EXPERTS:
            raise StrataError(
                f"expert_matvec_q8_0: {experts} experts; the GPU kernel takes at most "
                f"{EXPERT_MAX_EXPERTS}"
            )
        y = np.empty((tokens, k, rows), dtype=np.float32)
        inputs = _inputs(
            "expert_matvec_q8_0",
            {"qs": (qs, np.int8), "d": (d, np.float16), "ids": (ids, np.int32),
             "xq": (xq, np.int8), "xd": (xd, np.float32)},
        )  # fmt: skip
        shape = {"k": k, "rows": rows, "cols": cols}
        pairs = tokens * k
        if len(np.unique(ids)) == pairs:
            self._run("expert_pairs_q8_0", matvec_grid(rows, cols, pairs), inputs, {"y": y},
                      {"pairs": pairs} | shape)  # fmt: skip
        else:
            grid = max(1, min(experts, pairs)) * _blocks(rows, EXPERT_ROWS)
            self._run("expert_matvec_q8_0", grid, inputs, {"y": y},
                      {"experts": experts, "tokens": tokens} | shape)  # fmt: skip
        return y

    def router_topk(self, logits: Any, k: int, variant: str) -> Any:
        code = variant_code("router_topk", variant)
        if not 0 < k <= min(ROUTER_MAX_K, logits.shape[1]):
            raise StrataError(f"router_topk: k={k} is outside 1..{ROUTER_MAX_K} on the GPU")
        logits = np.ascontiguousarray(logits, np.float32)
        tokens, experts = logits.shape
        ids = np.empty((tokens, k), dtype=np.int32)
        weights = np.empty((tokens, k), dtype=np.float32)
        self._run("router_topk", router_grid(tokens, experts, variant), {"logits": logits},
                  {"ids": ids, "weights": weights},
                  {"tokens": tokens, "experts": experts, "k": k,
                   "variant": code})  # fmt: skip
        return ids, weights

    def topk(self, scores: Any, k: int, variant: str) -> Any:
        """The top k of each row of ``scores`` (queries x n, or one row), all rows in each
        launch (topk_launches); ids and values come back in the shape of the rows, k a row."""
        code = variant_code("topk", variant)
        scores = np.ascontiguousarray(scores, np.float32)
        rows = scores.reshape(-1, scores.shape[-1])
        queries, n = rows.shape
        if not 0 < k <= min(TOPK_MAX_K, n):
            raise StrataError(f"topk: k={k} is outside 1..{min(TOPK_MAX_K, n)} on the GPU")
        ids = np.empty((queries, k), np.int32)
        values = np.empty((queries, k), np.float32)
        rt, kernel = self.runtime, self.code.kernel("topk")
        with self._allocations() as take:
            source, scratch = take(rows.nbytes), take(topk_scratch_bytes(queries, k))
            ids_at, values_at = take(ids.nbytes), take(values.nbytes)
            rt.upload(source, rows, self.stream)
            arguments = {"scores": rt.address(source), "queries": queries, "n": n, "stride": n,
                         "k": k, "ids": rt.address(ids_at), "values": rt.address(values_at),
                         "variant": code, "scratch": rt.address(scratch)}  # fmt: skip
            launches = [
                self._kernel("topk", grid, abi.pack("topk", arguments | {"stage": stage}, kernel))
                for stage, grid in topk_launches(queries, n, variant)
            ]
            self.seconds = self._timed(launches, [(ids, ids_at), (values, values_at)])
        shape = (*scores.shape[:-1], k)
        return ids.reshape(shape), values.reshape(shape)

    def read_bandwidth(self, nbytes: int, repeats: int = 5) -> float:
        """GB/s of the read kernel over a buffer of ``nbytes`` on the card (median of
        ``repeats`` after one warm-up), as HIP or CUDA events time it."""
        with self._allocations() as take:
            launch = [self._kernel(*self._read_launch(nbytes, take))]
            times = [self.launch_timed(launch, []) for _ in range(repeats + 1)]
        return nbytes // 16 * 16 / statistics.median(times[1:]) / 1e9

    def _read_launch(self, nbytes: int, take: Callable[[int], Any]) -> tuple[str, int, bytes]:
        """The read kernel over a buffer of ``nbytes`` from ``take``."""
        rt, words = self.runtime, nbytes // 16
        buffer, sink = take(words * 16), take(4)
        args = abi.pack(
            "read_bytes",
            {"buffer": rt.address(buffer), "words": words, "sink": rt.address(sink)},
            self.code.kernel("read_bytes"),
        )
        grid = min(_blocks(words, BLOCK * READ_WORDS_PER_THREAD), MAX_READ_BLOCKS)
        return ("read_bytes", grid, args)

    def prompt_gemm(self, a: Any, wt: Any) -> np.ndarray:
        """c = a @ wt.T with half inputs: a is M x K, wt is N x K. The WMMA kernel takes a
        16 x 16 tile a logical warp, the FMA kernel one a workgroup."""
        wmma = self.code.prompt_gemm == "wmma"
        (m, k), n = a.shape, wt.shape[0]
        c = np.empty((m, n), dtype=np.float32)
        tiles = _blocks(m, TILE) * _blocks(n, TILE)
        grid = _blocks(tiles, WARPS_PER_BLOCK) if wmma else tiles
        inputs = _inputs("prompt_gemm", {"a": (a, np.float16), "w": (wt, np.float16)})
        self._run("prompt_gemm", grid, inputs, {"c": c}, {"m": m, "n": n, "k": k})
        return c
