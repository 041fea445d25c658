"""Model profiles: the shape of `strata-core run`'s workload, from a small TOML file."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import attrs

from ..answer_cache import Recorder
from ..api.records import Workload
from ..errors import StrataError
from . import documents
from .context import ram_bytes

SHIPPED_DIR = Path(__file__).resolve().parent.parent / "profiles"
DEFAULT = SHIPPED_DIR / "default.toml"
GIB = 1 << 30
#: the profile a run takes unless told
DEFAULT_NAME = "small-moe"
#: the profiles shipped beside default.toml, by the names `--profile` takes
SHIPPED = {
    DEFAULT_NAME: DEFAULT,
    "deep-context": SHIPPED_DIR / "deep-context.toml",
    "deep-context-k2048": SHIPPED_DIR / "deep-context-k2048.toml",
    "large-moe": SHIPPED_DIR / "large-moe.toml",
    "dense-8b": SHIPPED_DIR / "dense-8b.toml",
}
#: the counts a profile may set to 0: a dense model has no router and no experts
MAY_BE_ZERO = frozenset({"experts", "experts_per_token"})


def named(value: str) -> Path:
    """`--profile`'s value: a shipped profile's name, else the file it names."""
    return SHIPPED.get(value, Path(value))


def shipped_hint(path: Path) -> str:
    """For a profile that cannot be read: the shipped profiles' names, and the closest one to
    what was given."""
    import difflib

    close = difflib.get_close_matches(path.name.removesuffix(".toml"), list(SHIPPED), n=1)
    return f"; the shipped profiles are {', '.join(SHIPPED)}" + (
        f"; did you mean {close[0]}?" if close else ""
    )


def _structure(raw: dict[str, Any], path: Path) -> Workload:
    """A profile whose every key is a Workload field with a value of the field's type, every
    count positive, is read by attrs alone (every plan reads the shipped one, and cattrs
    costs more to import than to use); any other by cattrs, which says what is wrong."""
    fields = attrs.fields_dict(Workload)
    if all(
        k in fields
        and type(v) is type(fields[k].default)
        and not (isinstance(v, int) and v <= (-1 if k in MAY_BE_ZERO else 0))
        for k, v in raw.items()
    ):
        return Workload(**raw)
    return _structure_strictly(raw, path)


def load(path: Path | None = None, recorder: Recorder | None = None) -> Workload:
    path = path or DEFAULT
    try:
        documents.check_size(path, "profile")
        text = (recorder or Recorder()).read_text(path.resolve())
        documents.check(path, text, False, "profile")
        raw = tomllib.loads(text)
    except OSError as exc:
        raise StrataError(
            f"{path}: cannot read the profile ({exc.strerror or exc}){shipped_hint(path)}"
        ) from None
    except UnicodeDecodeError as exc:
        raise StrataError(f"{path}: not UTF-8 text (byte {exc.start}); not a profile") from None
    except tomllib.TOMLDecodeError as exc:
        raise StrataError(f"{path}: not valid TOML: {exc}") from None
    workload = _structure(raw, path)
    if workload.hidden % 32:
        raise StrataError(f"{path}: hidden must be a multiple of 32 (Q8_0 blocks)")
    if (workload.experts == 0) != (workload.experts_per_token == 0):
        raise StrataError(
            f"{path}: experts and experts_per_token must both be 0 (a dense model) or both be "
            "positive"
        )
    if (
        workload.experts_per_token > workload.experts
        or workload.cells_kept > workload.context_cells
    ):
        raise StrataError(
            f"{path}: experts_per_token and cells_kept must fit in experts and context_cells"
        )
    if any(cols % 32 for _, cols in workload.dense):
        raise StrataError(f"{path}: dense: each matrix's columns are a multiple of 32 (Q8_0)")
    need, ram = memory_bytes(workload), ram_bytes(recorder or Recorder())
    if ram is not None and need > ram:
        raise StrataError(
            f"{path}: the workload takes about {need / GIB:.0f} GiB of memory, more than this "
            f"machine's {ram / GIB:.1f} GiB"
        )
    return workload


def _count(value: object, _: type) -> int:
    """A count, 0 included (which fields may be 0 is checked after: MAY_BE_ZERO)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    if value < 0:
        raise ValueError(f"expected a positive integer, got {value!r}")
    return value


def _text(value: object, _: type) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected text, got {value!r}")
    return value


def _structure_strictly(raw: dict[str, Any], path: Path) -> Workload:
    """Every field of its own type, every count positive: one line naming the first that is
    not."""
    import cattrs

    converter = cattrs.Converter(forbid_extra_keys=True)
    converter.register_structure_hook(int, _count)
    converter.register_structure_hook(str, _text)
    try:
        workload = converter.structure(raw, Workload)
    except cattrs.ClassValidationError as exc:
        named, _ = exc.group_exceptions()
        for error, note in named:
            raise StrataError(f"{path}: {note.name}: {error}") from None
        first = cattrs.transform_error(exc, path="profile")[0]
        raise StrataError(f"{path}: {first}") from None
    for name, value in attrs.asdict(workload).items():
        if value == 0 and name not in MAY_BE_ZERO:
            raise StrataError(f"{path}: {name}: expected a positive integer, got 0")
    if any(0 in shape for shape in workload.dense):
        raise StrataError(f"{path}: dense: expected positive rows and columns")
    return workload


def memory_bytes(w: Workload) -> int:
    """About the host memory the workload's arrays take: every layer's dense Q8_0 matrices,
    every expert's Q8_0 weights and the prompt GEMM's weights (FP32), the prompt's
    activations, outputs and router logits, and the scores of the top-k."""
    dense = w.layers * sum(rows * cols for rows, cols in w.dense_shapes)
    return (
        dense * 17 // 16
        + 4 * w.ffn * w.hidden
        + w.experts * w.ffn * w.hidden * 17 // 16
        + 4 * w.prompt_tokens * (w.hidden + 2 * w.ffn + w.experts)
        + 4 * w.context_cells
    )
