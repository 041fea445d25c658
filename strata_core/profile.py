"""Model profiles: the shape of `strata-core run`'s workload, from a small TOML file."""

from __future__ import annotations

import tomllib
from pathlib import Path

import cattrs

from .answer_cache import Recorder
from .errors import StrataError
from .records import Workload

SHIPPED_DIR = Path(__file__).resolve().parent / "profiles"
DEFAULT = SHIPPED_DIR / "default.toml"
#: the profiles shipped beside default.toml, by the names `--profile` takes
SHIPPED = {
    "small-moe": DEFAULT,
    "deep-context": SHIPPED_DIR / "deep-context.toml",
    "large-moe": SHIPPED_DIR / "large-moe.toml",
}


def named(value: str) -> Path:
    """`--profile`'s value: a shipped profile's name, else the file it names."""
    return SHIPPED.get(value, Path(value))


def load(path: Path | None = None, recorder: Recorder | None = None) -> Workload:
    path = path or DEFAULT
    try:
        raw = tomllib.loads((recorder or Recorder()).read_text(path.resolve()))
    except OSError as exc:
        raise StrataError(f"{path}: cannot read the profile ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise StrataError(f"{path}: not UTF-8 text (byte {exc.start}); not a profile") from None
    except tomllib.TOMLDecodeError as exc:
        raise StrataError(f"{path}: not valid TOML: {exc}") from None
    converter = cattrs.Converter(forbid_extra_keys=True)
    try:
        workload = converter.structure(raw, Workload)
    except cattrs.BaseValidationError as exc:
        first = cattrs.transform_error(exc, path="profile")[0]
        raise StrataError(f"{path}: {first}") from None
    for name in (
        "hidden",
        "ffn",
        "experts",
        "experts_per_token",
        "context_cells",
        "cells_kept",
        "prompt_tokens",
        "prompt_queries",
        "gpu_read_bytes",
    ):
        if getattr(workload, name) <= 0:
            raise StrataError(f"{path}: {name} must be positive")
    if workload.hidden % 32:
        raise StrataError(f"{path}: hidden must be a multiple of 32 (Q8_0 blocks)")
    if (
        workload.experts_per_token > workload.experts
        or workload.cells_kept > workload.context_cells
    ):
        raise StrataError(
            f"{path}: experts_per_token and cells_kept must fit in experts and context_cells"
        )
    return workload
