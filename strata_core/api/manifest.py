"""A plugin's kernel build manifest (``kernels/build.json``, written by
strata_core/hip/build_hook.py) read into a KernelLibrary."""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from .. import bounded
from .records import KernelLibrary

MANIFEST = "build.json"
_str = attrs.validators.instance_of(str)
_optional_str = attrs.validators.optional(_str)
_strings = attrs.validators.deep_iterable(_str, attrs.validators.instance_of(list))
_names = attrs.validators.deep_mapping(_str, _str, attrs.validators.instance_of(dict))


@attrs.frozen
class BuildManifest:
    source: str = attrs.field(validator=_str)
    targets: list[str] = attrs.field(validator=_strings)
    code_objects: dict[str, str] = attrs.field(validator=_names)
    compiler: str | None = attrs.field(default=None, validator=_optional_str)
    problem: str | None = attrs.field(default=None, validator=_optional_str)
    failures: dict[str, str] = attrs.field(factory=dict, validator=_names)


def structure(raw: object) -> BuildManifest:
    """The manifest from its JSON: a well-formed one by attrs alone (every plan reads the
    plugins' manifests, and cattrs costs more to import than to use), any other by cattrs,
    which says what is wrong (a ValueError)."""
    try:
        return BuildManifest(**raw)  # type: ignore[arg-type]
    except TypeError:
        import cattrs

        try:
            return cattrs.structure(raw, BuildManifest)
        except cattrs.BaseValidationError as exc:
            raise ValueError(cattrs.transform_error(exc, path="build")[0]) from None


def load(directory: Path) -> KernelLibrary:
    """The library in ``directory``; what is wrong with it becomes its problems, never an
    exception."""
    path = directory / MANIFEST
    try:
        manifest = structure(json.loads(bounded.read_text(path, bounded.BUILD_MANIFEST)))
    except FileNotFoundError:
        return KernelLibrary(
            directory,
            (),
            problems=(f"no {path}: the plugin was installed without its kernel build",),
        )
    except (OSError, ValueError) as exc:
        return KernelLibrary(directory, (), problems=(f"{path} is not a build manifest: {exc}",))
    code_objects = {t: directory / name for t, name in manifest.code_objects.items()}
    problems = [manifest.problem] if manifest.problem else []
    problems += manifest.failures.values()
    problems += [f"{p} is missing" for p in code_objects.values() if not p.is_file()]
    return KernelLibrary(
        directory,
        tuple(manifest.targets),
        {t: p for t, p in code_objects.items() if p.is_file()},
        manifest.compiler,
        tuple(problems),
    )
