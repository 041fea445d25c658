"""Every `--json` answer of `strata-core`, built here and nowhere else from the records the
pipeline, the run and the commands return: `plan`, `devices`, `run`, `env`, `plugins` (and
`--check`), `table check` and the error answer; the schema version and the notes each
carries. docs/json.md describes them key by key, and which function builds each."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..api.manager import PluginRecord
from ..api.records import KernelLibrary
from ..api.switches import Resolved
from ..plan import packages
from ..plan.claims import Assignment
from ..plan.pictures import PictureReader
from ..plan.plan import Plan, backend_of
from ..plan.selection import Selection

if TYPE_CHECKING:  # records of commands whose modules `plan` and `devices` do not load
    from ..host.threads import ThreadChoice
    from ..run import GpuFacts, HostFacts, KernelReports, RunOutcome, StepReport
    from ..run.workload import KernelReport
    from ..tuning.lookup import TuningDecision
    from ..tuning.table_check import TableCheck
    from .env_facts import EnvReport

#: the version of every --json answer's layout (docs/json.md); a change that removes or
#: renames a key, or changes its meaning, raises it
SCHEMA_VERSION = 1

Answer = dict[str, Any]
#: what `table check --json` says of a table, null where the table is refused
TABLE_FACTS = ("library", "arch", "version", "rows", "tuned", "lookup_name", "forced_by")


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
        "status": packages.status(
            d.physical_gfx, os_name, env, d.arch.described_by if d.arch else ""
        ),
        "matrix_cores": d.arch.matrix_cores.value if d.arch and d.arch.matrix_cores else None,
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


def env_answer(report: EnvReport) -> Answer:
    """`strata-core env --json`."""
    config = report.config
    return {
        "schema_version": SCHEMA_VERSION,
        "strata": report.strata,
        "plugins": [
            {
                "name": r.name,
                "distribution": r.distribution,
                "version": r.version,
                "status": r.status.value,
            }
            for r in report.plugins
        ],
        "python": report.python,
        "os": report.os,
        "kernel": report.kernel,
        "cpu": {
            "name": report.cpu.name,
            "isa_level": report.cpu.isa_level,
            "host_kernels": report.cpu.host_kernels,
        },
        "numpy": {"version": report.numpy.version, "blas": report.numpy.blas},
        "rocm": report.rocm,
        "drivers": dict(report.drivers),
        "runtimes": list(report.runtimes),
        "libraries": {n: {"version": v.version, "how": v.how} for n, v in report.libraries.items()},
        "devices": [
            device_dict(a, report.selection, report.os_label, report.env)
            for a in report.assignments
        ],
        "selected": list(report.selection.indices),
        "backend": report.backend,
        "variables": report.variables,
        "run_config": {
            "path": str(report.config_path) if report.config_path else None,
            "gpu": config.gpu,
            "exe": config.exe,
            "env": dict(config.env),
            "args": list(config.args),
        },
        "warnings": list(report.warnings),
    }


def tuning_dict(decision: TuningDecision) -> Answer:
    """A tuning table's decision, as `plan` and `run` show it."""
    return {
        "table": decision.table,
        "used": decision.used,
        "reason": decision.reason,
        "rows": decision.rows,
    }


def threads_dict(choice: ThreadChoice) -> Answer:
    """The host kernels' threads (null until a run measures them), OpenMP's wait policy
    (null: OpenMP's own), where they come from and why."""
    return {
        "threads": choice.threads,
        "wait_policy": choice.wait_policy,
        "source": choice.source,
        "reason": choice.reason,
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
        "tuning": {name: tuning_dict(d) for name, d in plan.tuning.items()},
        "host_threads": threads_dict(plan.host.threads) if plan.host else None,
        "kernels": {
            op: {"variant": c.variant, "reason": c.reason} for op, c in plan.kernels.items()
        },
        "facts": {name: _resolved_dict(r) for name, r in plan.facts.items()},
        "pictures": _pictures_dict(plan.pictures) if plan.pictures else None,
        "log": list(plan.log),
        "warnings": list(plan.warnings),
        "notes": list(notes),
    }


def _pictures_dict(pictures: PictureReader) -> Answer:
    return {"reader": pictures.reader, "reason": pictures.reason, "notes": list(pictures.notes)}


def kernel_dict(report: KernelReport, read_gbs: float) -> Answer:
    """One kernel of a run, its times and rates to six significant figures; ``spread_ms`` is
    half the interquartile range of the calls' times, and ``bandwidth_of_read`` above 1 means
    the data was cache-resident."""
    call_s = report.call_s
    return {
        "variant": report.variant,
        "reason": report.reason,
        "calls": len(report.seconds),
        "checked": report.checked,
        "median_ms": _figures(report.median_s * 1e3),
        "spread_ms": _figures(report.spread_s * 1e3),
        "call_ms": None if call_s is None else _figures(call_s * 1e3),
        "throughput": _figures(report.throughput),
        "unit": report.unit,
        "bandwidth_gbs": _figures(report.bandwidth_gbs),
        "bandwidth_of_read": round(report.bandwidth_gbs / read_gbs, 3) if read_gbs else None,
    }


def kernel_dicts(kernels: KernelReports) -> dict[str, Answer]:
    """Every kernel of a run by name, as `run` shows them."""
    return {name: kernel_dict(r, kernels.read_gbs) for name, r in kernels.reports.items()}


def _figures(value: float) -> float:
    """Six significant figures: a host kernel's nanoseconds and a tiny profile's rates stay
    above zero on any machine."""
    return float(f"{value:.6g}")


def _facts_dict(facts: HostFacts | GpuFacts) -> Answer:
    from ..run import HostFacts

    if isinstance(facts, HostFacts):
        return {
            "library": str(facts.library),
            "isa": facts.isa,
            "threads": facts.threads,
            "threads_choice": threads_dict(facts.thread_choice),
            "read_bandwidth_gbs": round(facts.read_gbs, 2),
            "workload": facts.workload,
            "tuning": tuning_dict(facts.tuning),
        }
    return {
        "plugin": facts.plugin,
        "card": facts.card,
        "target": facts.target,
        "code_object": str(facts.code_object),
        "runtime": facts.runtime,
        "read_bandwidth_gbs": round(facts.read_gbs, 2),
        "workload": facts.workload,
        "gemm_library": facts.gemm_library,
        "tuning": {name: tuning_dict(d) for name, d in facts.tuning.items()},
    }


def step_dict(step: StepReport, read_gbs: float) -> Answer:
    """The decode step a card replayed, as `run` shows it (times in ms; shares of the card's
    read over the step's bytes; graph figures null where the runtime has no graphs)."""
    times = step.times

    def share(seconds: float | None) -> float | None:
        return None if seconds is None else step.share_of_read(seconds, read_gbs)

    return {
        "name": step.name,
        "launches": times.launches,
        "bytes_read": step.bytes_read,
        "graph_ms": None if times.graph_s is None else times.graph_s * 1e3,
        "graph_share_of_read": share(times.graph_s),
        "queued_ms": times.queued_s * 1e3,
        "queued_share_of_read": share(times.queued_s),
        "graph_missing": times.graph_missing,
        "handover_ms": None if times.handover_s is None else times.handover_s * 1e3,
        "handover_share_of_read": share(times.handover_s),
        "handover_missing": times.handover_missing,
    }


def run_answer(
    outcome: RunOutcome, notes: Sequence[str], warnings: Sequence[str], log: Sequence[str]
) -> Answer:
    """`strata-core run --json`: the run's facts and kernels; ``notes`` the plan's and those
    the run said."""
    return {
        "schema_version": SCHEMA_VERSION,
        "backend": outcome.backend,
        **_facts_dict(outcome.facts),
        "kernels": kernel_dicts(outcome.kernels),
        "step": step_dict(outcome.step, outcome.kernels.read_gbs) if outcome.step else None,
        "notes": list(notes),
        "warnings": list(warnings),
        "log": list(log),
    }


def table_dict(check: TableCheck) -> Answer:
    """One table of `table check --json`; its facts are null where it is refused."""
    table = check.table
    facts: dict[str, Any] = (
        dict.fromkeys(TABLE_FACTS)
        if table is None
        else {
            "library": table.kind.library,
            "arch": table.arch,
            "version": table.version,
            "rows": len(table.rows),
            "tuned": table.tuned_rows,
            "lookup_name": table.kind.file_name(table.arch, table.version),
            "forced_by": table.kind.variable,
        }
    )
    return {"path": str(check.path), "ok": check.ok, **facts, "problems": list(check.problems)}


def table_check_answer(
    ok: bool, checks: Sequence[TableCheck], problems: Sequence[str]
) -> Answer:
    """`strata-core table check --json`; ``problems`` only where there are some."""
    tables = [table_dict(check) for check in checks]
    answer: Answer = {"schema_version": SCHEMA_VERSION, "ok": ok, "tables": tables}
    if problems:
        answer["problems"] = list(problems)
    return answer
