"""The workload `strata-core run` runs on a backend's kernels: decode and prompt steps of a
model profile. Its inputs are a function of the profile and a seed, so that a GPU run in a
child process and the parent that checks its results make the same ones; running the calls
and checking their results are separate steps. On the host the reference is numpy
(strata_core.host.reference); on a GPU it is the host backend."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol

import attrs
import numpy as np

from .. import q8
from ..api.kernels import TOPK_OPS
from ..api.records import KernelChoice, Workload
from ..errors import StrataError
from ..tuning.dispatch import TunedDispatch
from . import draws

GB = 1e9
#: the decode step's top-k and the prompt read's: the last call of each step
TOPK = tuple(TOPK_OPS.values())
BANDWIDTH_BUFFER = 256 << 20
#: The operations the workload runs, each with the unit of its throughput.
REPORTS = {
    "matvec_q8_0": ("matvec_q8_0", "GB/s"),
    "router_topk": ("router_topk", "tokens/s"),
    "expert_matvec_q8_0": ("expert_matvec_q8_0", "GB/s"),
    "router_topk_batch": ("router_topk", "tokens/s"),
    "expert_matvec_q8_0_batch": ("expert_matvec_q8_0", "GB/s"),
    "router_topk_prompt": ("router_topk", "tokens/s"),
    "topk": ("topk", "cells/s"),
    "topk_prompt": ("topk_prompt", "cells/s"),
    "prompt_gemm": ("prompt_gemm", "GFLOP/s"),
}


#: the plan's choice an operation runs with, where it is another's: the expert step is a
#: grouped matvec_q8_0 with the same dot instruction
CHOICE_OF = {"expert_matvec_q8_0": "matvec_q8_0"}


class Progress(Protocol):
    """Told what a run is doing (``what``, a phase) and how far it is (``detail``), for a
    person's terminal to show."""

    def __call__(self, what: str, detail: str = "") -> None: ...


def unseen(what: str, detail: str = "") -> None:
    """The progress of a run that nobody watches."""


class Kernels(Protocol):
    """The operations a backend runs, each with the variant the plan chose."""

    def keep(self, array: np.ndarray) -> Any:
        """``array`` as the operations read it on every call it is handed to (on a GPU, a copy
        in the card's memory made once): the weights that a run's calls share."""
        ...

    def matvec_q8_0(self, qs: Any, d: Any, xq: Any, xd: Any) -> np.ndarray: ...
    def expert_matvec_q8_0(self, qs: Any, d: Any, ids: Any, xq: Any, xd: Any) -> np.ndarray: ...
    def router_topk(self, logits: Any, k: int, variant: str) -> tuple[np.ndarray, np.ndarray]: ...
    def topk(self, scores: Any, k: int, variant: str) -> tuple[np.ndarray, np.ndarray]: ...


class Reference(Protocol):
    """What results are checked against: the same operations, without variants (a matvec is
    checked as an expert step of one expert)."""

    def expert_matvec_q8_0(self, qs: Any, d: Any, ids: Any, xq: Any, xd: Any) -> np.ndarray: ...
    def router_topk(self, logits: Any, k: int) -> tuple[np.ndarray, np.ndarray]: ...
    def topk(self, scores: Any, k: int) -> tuple[np.ndarray, np.ndarray]: ...


class GemmReference(Protocol):
    """What a prompt GEMM's result is checked against, and how closely."""

    tolerance: float

    def expected(self, x: np.ndarray) -> np.ndarray: ...


class Gemm(GemmReference, Protocol):
    """The prompt GEMM over one weight matrix: a call per solution, its own reference, and
    the tuning table's row key of a call over ``tokens`` rows."""

    def __call__(self, x: np.ndarray, solution: str = ...) -> np.ndarray: ...
    def table_key(self, tokens: int) -> tuple[Any, ...]: ...


def report_kind(report: str) -> str:
    """The REPORTS entry a report is one of: a dense matrix's own (``matvec_q8_0 6144x4096``,
    where a layer has several) is a ``matvec_q8_0``."""
    return report.split(" ", 1)[0]


def matvec_reports(workload: Workload) -> list[str]:
    """The report of each of a layer's dense matrices: ``matvec_q8_0`` where there is one,
    else one a shape."""
    shapes = workload.dense_shapes
    if len(shapes) == 1:
        return ["matvec_q8_0"]
    return [f"matvec_q8_0 {rows}x{cols}" for rows, cols in shapes]


@attrs.frozen
class Call:
    """One kernel call of the workload: its step, the report it counts in, its inputs and,
    for a matvec, which dense matrix it reads. An expert step's inputs are the tokens'
    activations; its ids are the result of the router call before it (the chain of a MoE
    layer)."""

    step: str
    report: str
    inputs: tuple[Any, ...]
    matrix: int = 0

    @property
    def op(self) -> str:
        return REPORTS[report_kind(self.report)][0]


@attrs.frozen
class Inputs:
    """The weights and every call of a run, made from the profile and the seed."""

    workload: Workload
    #: every layer's dense Q8_0 matrices (weights and scales), layer after layer
    dense: tuple[tuple[np.ndarray, np.ndarray], ...]
    w: np.ndarray
    calls: tuple[Call, ...]
    #: every expert's Q8_0 weights (experts x ffn x hidden) and scales
    expert_qs: np.ndarray
    expert_d: np.ndarray

    def largest_weights(self) -> np.ndarray:
        """The largest weight array the run reads (what the host's read rate is taken on)."""
        arrays = [qs for qs, _ in self.dense] + [self.expert_qs]
        return max(arrays, key=lambda a: a.nbytes)


def random_experts(
    rng: np.random.Generator, experts: int, rows: int, cols: int
) -> tuple[np.ndarray, np.ndarray]:
    """Q8_0 weights of ``experts`` experts drawn as raw random bits (-128 taken to -127, as
    Q8_0 never gives it), with scales of the size unit-normal weights quantize to (0.01 to
    0.03): a dense FP32 matrix first would take nine times the memory and the time."""
    qs = draws.q8_values(rng, experts * rows * cols)
    d = draws.q8_scales(rng, experts * rows * (cols // q8.BLOCK))
    return qs.reshape(experts, rows, cols), d.reshape(experts, rows, cols // q8.BLOCK)


def make_inputs(workload: Workload, seed: int = 0) -> Inputs:
    rng = np.random.default_rng(seed)
    w = workload
    dense = tuple(
        tuple(part[0] for part in random_experts(rng, 1, rows, cols))
        for _ in range(w.layers)
        for rows, cols in w.dense_shapes
    )
    gemm_w = rng.standard_normal((w.hidden, w.ffn), dtype=np.float32)
    calls: list[Call] = []

    def scores(queries: int = 1) -> np.ndarray:
        shape = (queries, w.context_cells) if queries > 1 else (w.context_cells,)
        return draws.standard_normal(rng, shape)

    def logits(tokens: int) -> np.ndarray:
        return rng.standard_normal((tokens, w.experts), dtype=np.float32)

    def activations(tokens: int) -> tuple[np.ndarray, np.ndarray]:
        xq, xd = q8.quantize_rows(rng.standard_normal((tokens, w.hidden), dtype=np.float32))
        return xq, xd.astype(np.float32)

    matrices = list(zip(matvec_reports(w), w.dense_shapes, strict=True))
    for step in range(w.decode_steps):
        name = f"decode step {step + 1}"
        for layer in range(w.layers):
            for i, (report, (_, cols)) in enumerate(matrices):
                xq, xd = q8.quantize_vector(rng.standard_normal(cols, dtype=np.float32))
                calls.append(Call(name, report, (xq, xd), layer * len(matrices) + i))
        batch = "_batch" if step % 2 and w.decode_batch_tokens > 1 else ""
        tokens = w.decode_batch_tokens if batch else 1
        if w.experts:
            calls.append(Call(name, "router_topk" + batch, (logits(tokens),)))
            calls.append(Call(name, "expert_matvec_q8_0" + batch, activations(tokens)))
        calls.append(Call(name, "topk", (scores(),)))
    for step in range(w.prompt_steps):
        name = f"prompt step {step + 1}"
        x = rng.standard_normal((w.prompt_tokens, w.hidden), dtype=np.float32)
        calls.append(Call(name, "prompt_gemm", (x,)))
        if w.experts:
            calls.append(Call(name, "router_topk_prompt", (logits(w.prompt_tokens),)))
        calls.append(Call(name, "topk_prompt", (scores(w.prompt_queries),)))
    expert_qs, expert_d = random_experts(rng, w.experts, w.ffn, w.hidden)
    return Inputs(workload, dense, gemm_w, tuple(calls), expert_qs, expert_d)


def wall_clock(call: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


def execute(
    kernels: Kernels,
    gemm: Gemm,
    clock: Callable[[Callable[[], Any]], tuple[Any, float]],
    inputs: Inputs,
    choices: Mapping[str, KernelChoice],
    dispatch: TunedDispatch,
    progress: Progress = unseen,
) -> list[tuple[Any, float]]:
    """Every call's result and seconds, in order; nothing is checked here. The weights are
    kept where the kernels read them before the first call."""
    w = inputs.workload
    dense = [(kernels.keep(qs), kernels.keep(d)) for qs, d in inputs.dense]
    expert_qs, expert_d = kernels.keep(inputs.expert_qs), kernels.keep(inputs.expert_d)
    gemm_key = gemm.table_key(w.prompt_tokens)
    steps = {"decode": w.decode_steps, "prompt": w.prompt_steps}
    done: list[tuple[Any, float]] = []
    for call in inputs.calls:
        if not done or call.step != inputs.calls[len(done) - 1].step:
            progress("running the workload", f"{call.step} of {steps[call.step.split()[0]]}")
        variant = choices[CHOICE_OF.get(call.op, call.op)].variant
        run: Callable[[], Any]
        if call.op == "matvec_q8_0":
            run = partial(kernels.matvec_q8_0, *dense[call.matrix], *call.inputs)
        elif call.op == "expert_matvec_q8_0":
            ids = done[-1][0][0]  # the router's, just before
            run = partial(kernels.expert_matvec_q8_0, expert_qs, expert_d, ids, *call.inputs)
        elif call.op == "router_topk":
            run = partial(kernels.router_topk, call.inputs[0], w.experts_per_token, variant)
        elif call.op in TOPK:
            run = partial(kernels.topk, call.inputs[0], w.cells_kept, variant)
        else:
            run = partial(dispatch.launch, gemm_key, partial(gemm, call.inputs[0]))
        done.append(clock(run))
    return done


@attrs.define
class KernelReport:
    op: str
    variant: str
    reason: str
    unit: str
    seconds: list[float] = attrs.field(factory=list)
    #: on a GPU, each call's time from the host (seconds are then the GPU's)
    call_seconds: list[float] = attrs.field(factory=list)
    amount: float = 0.0  # of `unit` per call
    bytes_read: float = 0.0  # per call
    checked: int = 0
    #: each call's bytes where they differ between calls (the expert step: the distinct
    #: experts its ids name); bytes_read is then their median
    call_bytes: list[float] = attrs.field(factory=list)

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds)

    @property
    def spread_s(self) -> float:
        """Half the interquartile range of the calls' times."""
        if len(self.seconds) < 2:
            return 0.0
        low, _, high = statistics.quantiles(self.seconds, n=4)
        return (high - low) / 2

    @property
    def call_s(self) -> float | None:
        """The median of the host's call times, on a GPU; None on the host."""
        return statistics.median(self.call_seconds) if self.call_seconds else None

    @property
    def throughput(self) -> float:
        """``unit`` a second."""
        return self.amount / self.median_s

    @property
    def bandwidth_gbs(self) -> float:
        return self.bytes_read / self.median_s / GB


def check(
    inputs: Inputs,
    results: Sequence[tuple[Any, float]],
    choices: Mapping[str, KernelChoice],
    reference: Reference,
    gemm: GemmReference,
    reference_name: str,
    trust: str,
    call_seconds: Sequence[float] = (),
) -> dict[str, KernelReport]:
    """Every result against the reference, and the reports of those that pass; the first
    call that differs stops the run with the step it came from. ``call_seconds``, on a GPU:
    each call's time from the host, beside its GPU time in ``results``."""
    w = inputs.workload
    kinds = {name: REPORTS["matvec_q8_0"] for name in matvec_reports(w)}
    kinds |= {name: kind for name, kind in REPORTS.items() if name != "matvec_q8_0"}
    reports = {
        name: KernelReport(name, *_choice(choices, op), unit) for name, (op, unit) in kinds.items()
    }
    if len(results) != len(inputs.calls):
        raise StrataError(
            f"{trust} gave {len(results)} results for {len(inputs.calls)} calls; "
            "it is not to be trusted here"
        )
    wrong = first_wrong(inputs, results, reference, gemm)
    if wrong is not None:
        call = inputs.calls[wrong]
        raise StrataError(
            f"{call.op} gave a wrong result in {call.step}: it differs from "
            f"{reference_name}; {trust} is not to be trusted here"
        )
    ids = np.empty((0, w.experts_per_token), np.int32)
    for call, (got, seconds) in zip(inputs.calls, results, strict=True):
        report = reports[call.report]
        report.seconds.append(seconds)
        report.checked += 1
        if call.op == "router_topk":
            report.amount = len(call.inputs[0])
            report.bytes_read = call.inputs[0].nbytes
            ids = got[0]  # checked: the reference's ids
        if call.op == "expert_matvec_q8_0":
            expert_bytes = inputs.expert_qs[0].nbytes + inputs.expert_d[0].nbytes
            report.call_bytes.append(len(np.unique(ids)) * expert_bytes)
            report.bytes_read = statistics.median(report.call_bytes)
            report.amount = report.bytes_read / GB
    for call, took in zip(inputs.calls, call_seconds, strict=False):
        reports[call.report].call_seconds.append(took)
    for name, (qs, d) in zip(matvec_reports(w), inputs.dense, strict=False):
        reports[name].bytes_read = qs.nbytes + d.nbytes
        reports[name].amount = reports[name].bytes_read / GB
    for op, queries in zip(TOPK, (1, w.prompt_queries), strict=True):
        reports[op].amount = queries * w.context_cells
        reports[op].bytes_read = queries * w.context_cells * 4
    reports["prompt_gemm"].amount = 2.0 * w.prompt_tokens * w.hidden * w.ffn / GB
    reports["prompt_gemm"].bytes_read = 4.0 * (w.prompt_tokens * w.hidden + w.hidden * w.ffn)
    return {name: report for name, report in reports.items() if report.seconds}


def _choice(choices: Mapping[str, KernelChoice], op: str) -> tuple[str, str]:
    choice = choices[CHOICE_OF.get(op, op)]
    return choice.variant, choice.reason


def first_wrong(
    inputs: Inputs,
    results: Sequence[tuple[Any, float]],
    reference: Reference,
    gemm: GemmReference,
) -> int | None:
    """The index of the first call whose result is not the reference's, or None. The routers
    are checked first, one by one, as each expert step runs on its router's ids; the calls
    before the first wrong router are then checked a kind at a time, each kind in as few
    reference calls as it takes (every decode step's matvecs of one matrix in one, the tokens
    of every expert step in one, every decode step's top-k in one), so that the reference
    reads each weight once."""
    calls, w = inputs.calls, inputs.workload
    agrees: dict[int, bool] = {}
    end = len(calls)
    for i, call in enumerate(calls):
        if call.op == "router_topk":
            want_ids, want_weights = reference.router_topk(call.inputs[0], w.experts_per_token)
            got_ids, got_weights = results[i][0]
            agrees[i] = np.array_equal(got_ids, want_ids) and np.allclose(
                got_weights, want_weights, rtol=1e-5, atol=1e-7
            )
            if not agrees[i]:
                end = i
                break

    def of(op: str) -> list[int]:
        return [i for i in range(end) if calls[i].op == op]

    for m, (qs, d) in enumerate(inputs.dense):
        matvecs = [i for i in of("matvec_q8_0") if calls[i].matrix == m]
        if not matvecs:
            continue
        xq, xd = (np.stack([calls[i].inputs[part] for i in matvecs]) for part in (0, 1))
        one_expert = np.zeros((len(matvecs), 1), np.int32)
        want = reference.expert_matvec_q8_0(qs[None], d[None], one_expert, xq, xd)
        agrees |= {
            i: close_to(results[i][0], y[0], 1e-5) for i, y in zip(matvecs, want, strict=True)
        }
    experts = of("expert_matvec_q8_0")
    if experts:
        routed = [results[i - 1][0][0] for i in experts]  # the router's, just before
        xq, xd = (np.concatenate([calls[i].inputs[part] for i in experts]) for part in (0, 1))
        want = reference.expert_matvec_q8_0(
            inputs.expert_qs, inputs.expert_d, np.concatenate(routed), xq, xd
        )
        bounds = np.cumsum([len(ids) for ids in routed])[:-1]
        agrees |= {
            i: close_to(results[i][0], y, 1e-5)
            for i, y in zip(experts, np.split(want, bounds), strict=True)
        }
    decode_topk = of(TOPK[0])
    if decode_topk:
        rows = np.stack([calls[i].inputs[0] for i in decode_topk])
        want_ids = reference.topk(rows, w.cells_kept)[0]
        agrees |= {
            i: np.array_equal(results[i][0][0], ids)
            for i, ids in zip(decode_topk, want_ids, strict=True)
        }
    for i in of(TOPK[1]):
        agrees[i] = np.array_equal(
            results[i][0][0], reference.topk(calls[i].inputs[0], w.cells_kept)[0]
        )
    for i in of("prompt_gemm"):
        x = calls[i].inputs[0]
        agrees[i] = close_to(results[i][0], gemm.expected(x), gemm.tolerance)
    return min((i for i, ok in agrees.items() if not ok), default=None)


#: the decode step a card replays as a graph: the first, which decodes one token
REPLAYED_STEP = "decode step 1"


def one_step(inputs: Inputs, step: str = REPLAYED_STEP) -> Inputs:
    """The inputs with the calls of ``step`` alone."""
    return attrs.evolve(inputs, calls=tuple(c for c in inputs.calls if c.step == step))


def step_bytes(inputs: Inputs, results: Sequence[tuple[Any, float]], step: str) -> int:
    """The bytes the calls of ``step`` read, as their reports count them: each matvec's
    matrix, the router's logits, the distinct experts its ids name, the top-k's scores."""
    experts = inputs.workload.experts
    expert = inputs.expert_qs[0].nbytes + inputs.expert_d[0].nbytes if experts else 0
    total = 0
    for i, call in enumerate(inputs.calls):
        if call.step != step:
            continue
        if call.op == "matvec_q8_0":
            total += sum(part.nbytes for part in inputs.dense[call.matrix])
        elif call.op == "expert_matvec_q8_0":
            total += len(np.unique(results[i - 1][0][0])) * expert  # the router's ids
        elif call.op != "prompt_gemm":
            total += call.inputs[0].nbytes
    return total


def close_to(got: Any, want: np.ndarray, tolerance: float) -> bool:
    """Same shape, and equal within ``tolerance`` of each value and of the largest."""
    got = np.asarray(got)
    return got.shape == want.shape and bool(
        np.allclose(got, want, rtol=tolerance, atol=tolerance * np.abs(want).max())
    )


def read_bandwidth(
    read_bytes: Callable[[np.ndarray], Any], weights: np.ndarray, repeats: int = 5
) -> float:
    """GB/s of all threads reading BANDWIDTH_BUFFER bytes, more than the caches hold: of the
    workload's ``weights`` where they are that large (no memory of its own), else of a buffer
    of that size."""
    flat = weights.reshape(-1).view(np.uint8)
    buffer = (
        flat[:BANDWIDTH_BUFFER]
        if flat.nbytes >= BANDWIDTH_BUFFER
        else np.ones(BANDWIDTH_BUFFER, np.uint8)
    )
    read_bytes(buffer)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        read_bytes(buffer)
        times.append(time.perf_counter() - start)
    return buffer.nbytes / statistics.median(times) / GB
