"""The hook specs' signatures as data: the arguments each hook takes and the type it returns,
read from the annotations in strata_core.api.hookspec, and a check of a value against a type."""

from __future__ import annotations

import collections.abc
import functools
import inspect
import types
import typing
from typing import Any

import attrs

from . import hookspec


@attrs.frozen
class HookSpec:
    name: str
    params: dict[str, Any]
    returns: Any

    def check_arguments(self, given: dict[str, Any]) -> None:
        """TypeError unless ``given`` are exactly the spec's arguments, each of its type."""
        if set(given) != set(self.params):
            raise TypeError(
                f"{self.name} takes {', '.join(self.params) or 'no arguments'}, "
                f"not {', '.join(given) or 'none'}"
            )
        for name, hint in self.params.items():
            if not conforms(given[name], hint):
                raise TypeError(
                    f"{self.name}: {name} must be {hint_name(hint)}, "
                    f"not {type(given[name]).__name__}"
                )


@functools.cache
def hook_specs() -> dict[str, HookSpec]:
    """Every hook of strata_core.api.hookspec, by name."""
    specs = {}
    for name, function in inspect.getmembers(hookspec, inspect.isfunction):
        if not name.startswith("strata_"):
            continue
        hints = typing.get_type_hints(function)
        returns = hints.pop("return")
        specs[name] = HookSpec(name, hints, _without_none(returns))
    return specs


def _without_none(hint: Any) -> Any:
    args = typing.get_args(hint)
    if _is_union(hint) and type(None) in args:
        rest = tuple(a for a in args if a is not type(None))
        return rest[0] if len(rest) == 1 else typing.Union[rest]  # noqa: UP007
    return hint


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def conforms(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of the annotated type ``hint`` (unions, tuples, mappings and
    classes; the elements of a tuple or mapping included)."""
    if hint is Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if _is_union(hint):
        return any(conforms(value, arg) for arg in args)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(item, args[0]) for item in value)
        return len(value) == len(args) and all(map(conforms, value, args))
    if origin in (collections.abc.Mapping, dict):
        return isinstance(value, collections.abc.Mapping) and all(
            conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items()
        )
    if isinstance(hint, type):
        return isinstance(value, hint)
    raise TypeError(f"no check for the annotation {hint!r}")


def hint_name(hint: Any) -> str:
    """The annotation as it reads in the hook spec: ``tuple[KernelChoice, ...]``."""
    if hint is Ellipsis:
        return "..."
    if hint is None or hint is type(None):
        return "None"
    args = typing.get_args(hint)
    if _is_union(hint):
        return " | ".join(map(hint_name, args))
    if args:
        return f"{typing.get_origin(hint).__name__}[{', '.join(map(hint_name, args))}]"
    return getattr(hint, "__name__", str(hint))
