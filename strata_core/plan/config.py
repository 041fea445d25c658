"""The run config: ``strata.toml`` (read with tomllib, written with tomli-w) or the
engine's server JSON config. Errors name the file, the line and the key."""

from __future__ import annotations

import json
import os
import re
import reprlib
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from .. import bounded
from ..answer_cache import Recorder
from ..digits import is_digits
from ..errors import StrataError
from . import documents
from .config_trust import check_config_trusted
from .exec_strings import argument_problem, program_problem, variable_problem
from .toml_keys import line_keys, quoted, spelled

if TYPE_CHECKING:
    import cattrs

#: The keys of the engine's server JSON config that strata reads; the rest are the engine's.
SERVER_KEYS = ("exe", "args", "env", "gpu", "hip_ordinal", "backend", "hipblaslt_table")


@attrs.frozen
class TuningSettings:
    hipblaslt_table: bool | None = None
    dirs: tuple[str, ...] = ()


@attrs.frozen
class RunConfig:
    """``gpu``: a HIP number, a list of them (the last is the main card) or ``"all"``;
    ``hip_ordinal``: the engine's server JSON's one HIP number; ``gpu_roles``: HIP number (as a
    string key) -> ``main`` or ``helper``."""

    gpu: int | tuple[int, ...] | str | None = None
    hip_ordinal: int | None = None
    gpu_roles: dict[str, str] = attrs.field(factory=dict)
    env: dict[str, str] = attrs.field(factory=dict)
    exe: str | None = None
    args: tuple[str, ...] = ()
    backend: str | None = None
    arch_plugin: str | None = None
    tuning: TuningSettings = TuningSettings()


class _BadValue(ValueError):
    """A value of the right shape but the wrong kind; its text is the whole message."""


def _shown(value: Any) -> str:
    """A value as a message shows it: its repr, cut short where it is long."""
    shortened = reprlib.Repr()
    shortened.maxstring = shortened.maxother = 80
    return shortened.repr(value)


def _role_problem(key: str, role: str) -> str | None:
    """What is wrong with one [gpu_roles] entry: HIP numbers (as keys) to main or helper."""
    if not is_digits(key):
        return f"{_shown(key)} is not a HIP number"
    if role not in ("main", "helper"):
        return f"expected main or helper, got {_shown(role)}"
    return None


def _strict_str(value: Any, _type: type) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise _BadValue(f"expected a string, got {_shown(value)}")


def _strict_bool(value: Any, _type: type) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise _BadValue(f"expected true or false, got {_shown(value)}")


def _strings(value: Any, _type: type) -> tuple[str, ...]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise _BadValue(f"expected a list of strings, got {_shown(value)}")


def _gpu(value: Any, _type: type) -> int | tuple[int, ...] | str | None:
    if value is None or value == "all":
        return None if value is None else "all"
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
    ):
        if len(set(value)) != len(value):
            raise _BadValue("each HIP number once")
        return tuple(value)
    raise _BadValue(f'expected a HIP number, a list of them or "all", got {_shown(value)}')


def _hip_number(value: Any, _type: type) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise _BadValue(f"expected a HIP number, got {_shown(value)}")


def _converter(forbid_extra_keys: bool) -> cattrs.Converter:
    import cattrs  # only where a config is read or written

    converter = cattrs.Converter(forbid_extra_keys=forbid_extra_keys)
    converter.register_structure_hook(str, _strict_str)
    converter.register_structure_hook(bool | None, _strict_bool)
    converter.register_structure_hook_func(lambda t: t == tuple[str, ...], _strings)
    converter.register_structure_hook(int | tuple[int, ...] | str | None, _gpu)
    converter.register_structure_hook(int | None, _hip_number)
    return converter


def find(
    given: Path | None, env: Mapping[str, str], recorder: Recorder | None = None
) -> Path | None:
    """The run config to read: the one given, else $STRATA_CONFIG, else ./strata.toml."""
    if given is not None:
        return given
    if env.get("STRATA_CONFIG"):
        return Path(env["STRATA_CONFIG"])
    default = Path("strata.toml")
    return default if (recorder or Recorder()).is_file(default.resolve()) else None


def find_and_load(
    given: Path | None, env: Mapping[str, str], recorder: Recorder | None = None
) -> tuple[Path | None, RunConfig]:
    """The run config that :func:`find` names, read; an empty one where there is none. One
    that another user could change is refused (strata_core.plan.config_trust)."""
    recorder = recorder or Recorder()
    path = find(given, env, recorder)
    if path is None:
        return None, RunConfig()
    check_config_trusted(path, env, recorder)
    return path, load(path, recorder)


def _read(path: Path, recorder: Recorder) -> str:
    """The config's text; a pipe (``--config /dev/stdin``, ``--config <(...)``) is read as it
    is, once, up to a character past the most a config holds, and the answer depends on what
    it held, so it is not cached. A file larger than that is refused unread."""
    if stat.S_ISFIFO(os.stat(path).st_mode):
        recorder.refuse(f"the run config {path} is a pipe")
        with open(path, encoding="utf-8") as handle:
            return handle.read(documents.MAX_BYTES + 1)
    documents.check_size(path, "run config")
    return recorder.read_text(path.resolve())


def load(path: Path, recorder: Recorder | None = None) -> RunConfig:
    """Read a run config; ``.json`` files are the engine's server config."""
    try:
        text = _read(path, recorder or Recorder())
    except OSError as exc:
        raise StrataError(f"{path}: cannot read the run config ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise StrataError(f"{path}: not UTF-8 text (byte {exc.start}); not a run config") from None
    documents.check(path, text, path.suffix == ".json", "run config")
    if path.suffix == ".json":
        return _load_server_json(path, text)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"\(at line (\d+)", str(exc))
        where = f"{path}:{line.group(1)}" if line else str(path)
        raise StrataError(f"{where}: not valid TOML: {exc}") from None
    return _structure(raw, path, text, forbid_extra_keys=True)


def _load_server_json(path: Path, text: str) -> RunConfig:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StrataError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    if not isinstance(raw, dict):
        raise StrataError(f"{path}:1: expected a JSON object")
    picked = {k: raw[k] for k in SERVER_KEYS if k in raw and k != "hipblaslt_table"}
    if "hipblaslt_table" in raw:
        picked["tuning"] = {"hipblaslt_table": raw["hipblaslt_table"]}
    config = _structure(picked, path, text, forbid_extra_keys=False)
    if config.hip_ordinal is not None and config.gpu not in (None, config.hip_ordinal):
        line = _line_of(text, ["hip_ordinal"], json_syntax=True) or 1
        raise StrataError(
            f"{path}:{line}: hip_ordinal: {config.hip_ordinal}, but gpu is {config.gpu}: "
            "neither is overridden, so the config must name one card"
        )
    return config


def _structure(raw: dict[str, Any], path: Path, text: str, forbid_extra_keys: bool) -> RunConfig:
    import cattrs

    try:
        config = _converter(forbid_extra_keys).structure(raw, RunConfig)
        for key, role in config.gpu_roles.items():
            problem = _role_problem(key, role)
            if problem:
                line = _line_of(text, ["gpu_roles", key], json_syntax=path.suffix == ".json")
                raise StrataError(f"{path}:{line or 1}: gpu_roles.{key}: {problem}")
        refused = _exec_problem(config)
        if refused:
            keys, key, problem = refused
            line = _line_of(text, keys, json_syntax=path.suffix == ".json")
            raise StrataError(f"{path}{f':{line}' if line else ''}: {key}: {problem}")
        return config
    except cattrs.BaseValidationError as exc:
        first = cattrs.transform_error(exc, path="", format_exception=_describe)[0]
        message, _, where = first.rpartition(" @ ")
        keys = [k.strip("'\"") for k in re.split(r"[.\[\]]", where) if k]
        extra = re.match(r"unknown key (\S+)", message)
        if extra:
            keys.append(extra.group(1))
        if path.suffix == ".json":
            keys = ["hipblaslt_table"] if keys[:1] == ["tuning"] else keys
        line = _line_of(text, keys, json_syntax=path.suffix == ".json")
        key = ".".join(keys) or "(top level)"
        raise StrataError(f"{path}:{line or 1}: {key}: {message}") from None


def _exec_problem(config: RunConfig) -> tuple[list[str], str, str] | None:
    """The first of the config's strings that exec cannot carry to the engine (its env, exe
    and args): the keys that find its line, the key a message names, and why."""
    for name, value in config.env.items():
        problem = variable_problem(name, value)
        if problem:
            return ["env", name], spelled(["env", name]), problem
    problem = program_problem(config.exe) if config.exe is not None else None
    if problem:
        return ["exe"], "exe", problem
    for at, arg in enumerate(config.args):
        problem = argument_problem(arg)
        if problem:
            return ["args"], f"args[{at}]", problem
    return None


def _describe(exc: BaseException, type_: Any) -> str:
    import cattrs

    if isinstance(exc, _BadValue):
        return str(exc)
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        known = ", ".join(f.name for f in attrs.fields(exc.cl))
        return f"unknown key {sorted(exc.extra_fields)[0]} (known: {known})"
    return cattrs.v.format_exception(exc, type_)


def _line_of(text: str, keys: list[str], json_syntax: bool) -> int | None:
    """The line that sets ``keys`` (a dotted path, list indices ignored)."""
    names = [k for k in keys if not is_digits(k)]
    if not names:
        return None
    lines = text.splitlines()
    if json_syntax:
        spellings = {f'"{names[-1]}"', quoted(names[-1])}
        return next(
            (n for n, line in enumerate(lines, 1) if any(s in line for s in spellings)), None
        )
    table: list[str] = []
    for n, line in enumerate(lines, 1):
        named = line_keys(line)
        if named is None:
            continue
        is_header, found = named
        if is_header:
            table = found
            if table == names:
                return n
        elif names[: len(table + found)] == table + found:
            return n
    return None


def dumps(config: RunConfig) -> str:
    import tomli_w

    raw = _converter(True).unstructure(config)
    raw["tuning"] = {k: v for k, v in raw["tuning"].items() if v not in (None, [])}
    return tomli_w.dumps({k: v for k, v in raw.items() if v not in (None, {}, [])})


def with_env(path: Path, values: Mapping[str, str], note: str = "") -> tuple[str, str]:
    """The run config's text before and after setting ``values`` in its env, everything else
    kept: comments, order and formatting (tomlkit), or the server JSON's keys in order. A TOML
    config gets ``note`` as each new value's comment (JSON has no comments)."""
    import tomlkit

    old = bounded.read_text(path, bounded.DOCUMENT) if path.is_file() else ""
    if path.suffix == ".json":
        data = json.loads(old) if old else {}
        data.setdefault("env", {}).update(values)
        return old, json.dumps(data, indent=2) + "\n"
    document = tomlkit.parse(old)
    if "env" not in document:
        document["env"] = tomlkit.table()
    table = document["env"]
    for name, value in values.items():
        item = tomlkit.string(value)
        if note:
            item.comment(note)
        table[name] = item
    return old, tomlkit.dumps(document)
