"""Model profiles: the shape of `strata-core run`'s workload, from a small TOML file."""

from __future__ import annotations

import tomllib
from pathlib import Path

import attrs

from .answer_cache import Recorder
from .errors import StrataError
from .records import Workload

DEFAULT = Path(__file__).resolve().parent / "profiles" / "default.toml"


def _structure(raw: dict, path: Path) -> Workload:
    """A profile whose every key is a Workload field with a value of the field's type is
    read by attrs alone (every plan reads the shipped one, and cattrs costs more to import
    than to use); any other by cattrs, which says what is wrong."""
    fields = attrs.fields_dict(Workload)
    if all(k in fields and type(v) is type(fields[k].default) for k, v in raw.items()):
        return Workload(**raw)
    import cattrs

    try:
        return cattrs.Converter(forbid_extra_keys=True).structure(raw, Workload)
    except cattrs.BaseValidationError as exc:
        raise StrataError(f"{path}: {cattrs.transform_error(exc, path='profile')[0]}") from None


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
    workload = _structure(raw, path)
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
