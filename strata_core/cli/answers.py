"""Every `--json` answer of `strata-core`, built here and nowhere else from the records the
pipeline and the run return: `plan`, `devices`, `run`, `plugins` (and `--check`), `table
check` and the error answer; the schema version and the notes each carries. docs/json.md
describes them key by key."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..api.manager import PluginRecord
from ..api.records import KernelLibrary
from ..api.switches import Resolved
from ..plan import packages
from ..plan.claims import Assignment
from ..plan.pictures import PictureReader
from ..plan.plan import Plan, backend_of
from ..plan.selection import Selection

#: the version of every --json answer's layout (docs/json.md); a change that removes or
#: renames a key, or changes its meaning, raises it
SCHEMA_VERSION = 1

Answer = dict[str, Any]


def dumps(answer: Answer, indent: int | None = 2) -> str:
    """An answer as the commands print it (the error answer on one line: ``indent=None``)."""
    return json.dumps(answer, indent=indent)


def error_answer(message: str, status: int) -> Answer:
    """What a command that cannot go on prints with --json, beside its one line on stderr."""
    return {"schema_version": SCHEMA_VERSION, "error": message, "exit": status}


def plugin_dict(record: PluginRecord, library: KernelLibrary | None) -> dict[str, Any]:
    return {
        "name": record.name,
        "distribution": record.distribution,
        "version": record.version,
        "api_version": record.api_version,
        "archs": list(record.targets),
        "status": record.status.value,
        "why": record.why,
        "builtin": record.builtin,
        "kernel_library": None if library is None else library_dict(library),
    }


def library_dict(library: KernelLibrary) -> dict[str, Any]:
    return {
        "directory": str(library.directory),
        "targets": list(library.targets),
        "code_objects": {t: str(p) for t, p in library.code_objects.items()},
        "compiler": library.compiler,
        "problems": list(library.problems),
    }


def plugins_answer(
    records: Sequence[PluginRecord],
    libraries: Mapping[str, KernelLibrary],
    problems: Sequence[str],
) -> Answer:
    """`strata-core plugins --json`."""
    plugins = [plugin_dict(r, libraries.get(r.name)) for r in records]
    return {"schema_version": SCHEMA_VERSION, "plugins": plugins, "problems": list(problems)}


def plugins_check_answer(found: Mapping[str, Sequence[str]], problems: Sequence[str]) -> Answer:
    """`strata-core plugins --check --json`: each checked plugin's problems."""
    return {"schema_version": SCHEMA_VERSION, "checked": dict(found), "problems": list(problems)}


def device_dict(
    assignment: Assignment, selection: Selection, os_name: str, env: Mapping[str, str]
) -> dict[str, Any]:
    """One card as `devices` and `plan` show it; its status follows an opt-in in ``env``."""
    d = assignment.device
    return {
        "index": d.index,
        "vendor": d.vendor,
        "backend": backend_of(d),
        "name": d.name,
        "gfx": d.gfx,
        "physical_gfx": d.physical_gfx,
        "family": d.family,
        "integrated": d.integrated,
        "integrated_evidence": d.integrated_evidence,
        "vram_bytes": d.vram_bytes,
        "wave_size": d.wave_size,
        "pci": d.pci,
        "plugin": assignment.plugin,
        "status": packages.status(d.physical_gfx, os_name, env),
        "usable": assignment.usable,
        "reason": f"hidden by {d.hidden_by}" if d.hidden_by else assignment.reason,
        "refusals": assignment.refusals if assignment.plugin is None else [],
        "selected": selection.selects(d),
        "role": selection.roles.get(d.index)
        if d.index is not None and selection.selects(d)
        else None,
        "override": d.override,
        "seen_by": list(d.seen_by),
    }


def devices_answer(
    rows: Sequence[Answer],
    backend: str,
    selection: Selection,
    notes: Sequence[str],
    warnings: Sequence[str],
) -> Answer:
    """`strata-core devices --json`."""
    return {
        "schema_version": SCHEMA_VERSION,
        "devices": list(rows),
        "backend": backend,
        "selected": list(selection.indices),
        "selection_reason": selection.reason,
        "notes": list(notes),
        "warnings": list(warnings),
    }


def _resolved_dict(resolved: Resolved) -> Answer:
    return {"value": resolved.value, "source": resolved.source, "reason": resolved.reason}


def plan_answer(
    plan: Plan, device_row: Answer, selected: Sequence[int], notes: Sequence[str]
) -> Answer:
    """`strata-core plan --json`."""
    package = plan.package
    return {
        "schema_version": SCHEMA_VERSION,
        "engine_env": plan.engine_env(),
        "engine_argv": plan.engine_args(),
        "backend": plan.backend,
        "device": device_row,
        "plugin": plan.plugin,
        "os": plan.context.os,
        "package": package.name if package else None,
        "package_rocm": package.rocm if package else None,
        "selected": list(selected),
        "switches": {n: _resolved_dict(r) for n, r in plan.switches.items()},
        "args": {n.lstrip("-").replace("-", "_"): _resolved_dict(r) for n, r in plan.args.items()},
        "tuning": {name: d.as_dict() for name, d in plan.tuning.items()},
        "kernels": {
            op: {"variant": c.variant, "reason": c.reason} for op, c in plan.kernels.items()
        },
        "pictures": _pictures_dict(plan.pictures) if plan.pictures else None,
        "log": list(plan.log),
        "warnings": list(plan.warnings),
        "notes": list(notes),
    }


def _pictures_dict(pictures: PictureReader) -> Answer:
    return {"reader": pictures.reader, "reason": pictures.reason, "notes": list(pictures.notes)}


def run_answer(
    backend: str,
    facts: Mapping[str, Any],
    kernels: Mapping[str, Any],
    notes: Sequence[str],
    warnings: Sequence[str],
    log: Sequence[str],
) -> Answer:
    """`strata-core run --json`: the run's facts and kernels (strata_core.run.RunOutcome)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "backend": backend,
        **facts,
        "kernels": kernels,
        "notes": list(notes),
        "warnings": list(warnings),
        "log": list(log),
    }


def table_check_answer(ok: bool, tables: Sequence[Answer], problems: Sequence[str]) -> Answer:
    """`strata-core table check --json`; ``problems`` only where there are some."""
    answer: Answer = {"schema_version": SCHEMA_VERSION, "ok": ok, "tables": list(tables)}
    if problems:
        answer["problems"] = list(problems)
    return answer
