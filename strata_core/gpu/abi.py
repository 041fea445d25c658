"""The launcher's side of the kernel ABI: each operation's explicit kernel arguments in order,
the layout it packs them in, and the check of that layout against a code object's metadata."""

from __future__ import annotations

import struct
from collections.abc import Mapping

import attrs

from .code_object import CodeObject, Kernel, KernelArg

BUFFER = "buffer"
#: struct format of each by-value argument type; a buffer is a 64-bit device address.
SCALARS = {"int32": "i", "int64": "q"}

# operation: (argument name, BUFFER or a key of SCALARS), in the order of strata_kernels.h
# fmt: off
OPERATIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "matvec_q8_0": (("qs", BUFFER), ("d", BUFFER), ("xq", BUFFER), ("xd", BUFFER), ("y", BUFFER),
                    ("rows", "int64"), ("cols", "int64")),
    "expert_matvec_q8_0": (("qs", BUFFER), ("d", BUFFER), ("ids", BUFFER), ("xq", BUFFER),
                           ("xd", BUFFER), ("y", BUFFER), ("experts", "int64"),
                           ("tokens", "int64"), ("k", "int32"), ("rows", "int64"),
                           ("cols", "int64")),
    "router_topk": (("logits", BUFFER), ("tokens", "int64"), ("experts", "int64"), ("k", "int32"),
                    ("ids", BUFFER), ("weights", BUFFER), ("variant", "int32")),
    "topk": (("scores", BUFFER), ("queries", "int64"), ("n", "int64"), ("stride", "int64"),
             ("k", "int32"), ("ids", BUFFER), ("values", BUFFER), ("variant", "int32"),
             ("scratch", BUFFER), ("stage", "int32")),
    "prompt_gemm": (("a", BUFFER), ("w", BUFFER), ("c", BUFFER), ("m", "int64"), ("n", "int64"),
                    ("k", "int64")),
    "read_bytes": (("buffer", BUFFER), ("words", "int64"), ("sink", BUFFER)),
    "expert_pairs_q8_0": (("qs", BUFFER), ("d", BUFFER), ("ids", BUFFER), ("xq", BUFFER),
                          ("xd", BUFFER), ("y", BUFFER), ("pairs", "int64"), ("k", "int32"),
                          ("rows", "int64"), ("cols", "int64")),
}
# fmt: on


def _format(kind: str) -> str:
    return "Q" if kind == BUFFER else SCALARS[kind]


def layout(operation: str) -> tuple[KernelArg, ...]:
    """Offsets as the C ABI lays the arguments out: each at its natural alignment."""
    args, offset = [], 0
    for _, kind in OPERATIONS[operation]:
        size = struct.calcsize(_format(kind))
        offset = (offset + size - 1) // size * size
        args.append(KernelArg(offset, size, "global_buffer" if kind == BUFFER else "by_value"))
        offset += size
    return tuple(args)


def pack(operation: str, values: Mapping[str, int], kernel: Kernel) -> bytes:
    """The kernel argument buffer, laid out by the code object's own metadata: each named
    argument at the offset the metadata gives it; hidden arguments zero. The start check
    (:func:`layout_problems`) has already refused metadata that differs from :func:`layout`."""
    buffer = bytearray(kernel.kernarg_size)
    for (name, kind), arg in zip(OPERATIONS[operation], kernel.explicit_args, strict=True):
        struct.pack_into("<" + _format(kind), buffer, arg.offset, values[name])
    return bytes(buffer)


def layout_problems(code_object: CodeObject) -> list[str]:
    """How a code object's kernels differ from what the launcher packs; empty when they agree."""
    problems = []
    for operation in OPERATIONS:
        where = f"{code_object.path.name}: {operation}"
        try:
            kernel = code_object.kernel(operation)
        except KeyError:
            problems.append(f"{where}: no kernel")
            continue
        want, have = layout(operation), kernel.explicit_args
        if not code_object.arg_kinds_known and len(want) == len(have):
            kinds = zip(want, have, strict=True)
            want = tuple(attrs.evolve(a, value_kind=h.value_kind) for a, h in kinds)
        if want != have:
            problems.append(
                f"{where}: metadata lays out {_show(have)}; the launcher packs {_show(want)}"
            )
    return problems


def _show(args: tuple[KernelArg, ...]) -> str:
    return ", ".join(f"{a.value_kind}@{a.offset}:{a.size}" for a in args)
