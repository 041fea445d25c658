"""A plugin's kernel build manifest (``kernels/build.json``, written by
native/hip/build_hook.py) read into a KernelLibrary."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import cattrs

from ..records import KernelLibrary

MANIFEST = "build.json"


@attrs.frozen
class BuildManifest:
    source: str
    targets: list[str]
    code_objects: dict[str, str]
    compiler: str | None = None
    problem: str | None = None
    failures: dict[str, str] = attrs.field(factory=dict)


def load(directory: Path) -> KernelLibrary:
    """The library in ``directory``; what is wrong with it becomes its problems, never an
    exception."""
    path = directory / MANIFEST
    try:
        manifest = cattrs.structure(json.loads(path.read_text()), BuildManifest)
    except FileNotFoundError:
        return KernelLibrary(
            directory,
            (),
            problems=(f"no {path}: the plugin was installed without its kernel build",),
        )
    except cattrs.BaseValidationError as exc:
        first = cattrs.transform_error(exc, path="build")[0]
        return KernelLibrary(directory, (), problems=(f"{path} is not a build manifest: {first}",))
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
