"""What the commands print for people: plugins, devices, the plan and one switch explained
(their --json answers are strata_core.cli.answers's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import log, people
from ..api.manager import PluginRecord, PluginStatus
from ..api.records import KernelLibrary
from ..api.switches import Switch
from ..gpu.backends import numbering_of, of_vendor
from ..plan.plan import Plan
from ..plan.selection import Selection

GIB = 1 << 30


def library_lines(name: str, library: KernelLibrary) -> list[str]:
    """What `strata-core plugins` says of one plugin's kernel library."""
    lines = [f"{name}: {target} {path.name}" for target, path in library.code_objects.items()]
    if library.code_objects and library.compiler:
        lines.append(f"{name}: built by {library.compiler}")
    if library.missing:
        lines.append(
            f"{name}: no code object for {', '.join(library.missing)}: nothing runs on those "
            "GPUs (the host backend runs instead)"
        )
    lines += [f"{name}: {problem}" for problem in library.problems]
    return lines


def plugins_text(
    records: Sequence[PluginRecord],
    libraries: Mapping[str, KernelLibrary],
    columns: int | None = None,
) -> list[str]:
    """The plugins under column headers, each one's status and, on the line below, why; then
    each kernel library's code objects."""
    rows = [("name", "distribution", "version", "api", "archs", "status")]
    whys = []
    for r in records:
        status, why = r.status.value, r.why
        library = libraries.get(r.name)
        if r.status is PluginStatus.ACTIVE and library is not None and not library.code_objects:
            # it plans, and runs nothing on a GPU
            status, why = "plans only", (library.problems or ["no code objects"])[0]
        whys.append(why)
        rows.append(
            (
                r.name,
                r.distribution,
                r.version,
                str(r.api_version or "-"),
                ",".join(r.targets) or "-",
                status,
            )
        )
    header, *drawn = people.table_rows(rows, flexible=4, columns=columns)
    lines = list(header)
    for row_lines, why in zip(drawn, whys, strict=True):
        lines += row_lines
        if why:
            lines += people.wrapped(f"    {why}", columns)
    if libraries:
        lines += ["", "kernel libraries (HIP code objects and PTX):"]
        lines += [f"  {line}" for n, lib in libraries.items() for line in library_lines(n, lib)]
    return people.lines_for(lines, columns)


def vram_text(vram_bytes: int | None) -> str:
    """VRAM in GiB, to a tenth (32 GiB, 0.5 GiB); ? where unknown."""
    return "?" if vram_bytes is None else f"{round(vram_bytes / GIB, 1):g} GiB"


def pci_texts(addresses: Sequence[str | None]) -> list[str]:
    """PCI addresses as lspci shows them: without the domain where every one is in 0000."""
    same = all(a is None or a.startswith("0000:") for a in addresses)
    return [
        "no PCI address" if a is None else a.removeprefix("0000:") if same else a for a in addresses
    ]


def family_cell(row: Mapping[str, Any]) -> str:
    """The family column: an AMD card's family; an NVIDIA card's vendor alone (its compute
    capability is its target and its status)."""
    backend = of_vendor(row["vendor"])
    return backend.family_column if backend and backend.family_column else str(row["family"])


def devices_text(
    rows: Sequence[Mapping[str, Any]],
    selection: Selection,
    verbose: bool = False,
    columns: int | None = None,
) -> list[str]:
    """The cards under column headers (``*`` marks the chosen ones), each with its status, its
    matrix cores (where a plugin describes the target) and who runs it on the line below;
    ``verbose`` adds why each plugin refuses a card none runs."""
    if not rows:
        return ["no GPU found"]
    table = [("", "#", "card", "target", "family", "kind", "VRAM", "PCI")]
    for row, pci in zip(rows, pci_texts([row["pci"] for row in rows]), strict=True):
        table.append(
            (
                "*" if row["selected"] else " ",
                "-" if row["index"] is None else str(row["index"]),
                row["name"],
                row["gfx"],
                family_cell(row),
                "integrated" if row["integrated"] else "discrete",
                vram_text(row["vram_bytes"]),
                pci,
            )
        )
    header, *drawn = people.table_rows(table, right={1}, flexible=2, columns=columns)
    out = list(header)
    for row, lines in zip(rows, drawn, strict=True):
        role = f" [{row['role']}]" if row["role"] else ""
        physical = (
            ""
            if row["gfx"] == row["physical_gfx"]
            else f"; physically {row['physical_gfx']} ({row['override']})"
        )
        cores = row["matrix_cores"]
        cores = "" if cores is None else f"{'no' if cores == 'none' else cores} matrix cores; "
        out += lines
        out += people.wrapped(
            f"      {row['status']}; {cores}{row['reason']}{role}{physical}", columns
        )
        for refusal in row["refusals"] if verbose else []:
            out += people.wrapped(f"        {refusal}", columns)
    chosen = ", ".join(str(i) for i in selection.indices) or "none"
    out += people.wrapped(f"selected: {chosen} ({selection.reason})", columns)
    return out


SOURCE_TITLES = {
    "user": "set by you",
    "config": "from the run config",
    "arch-default": "architecture defaults",
    "igpu-set": "iGPU prompt set",
    "builtin": "engine built-in (unset)",
}


def plan_heading(plan: Plan) -> str:
    """The plan's first line: the card (or the host's CPU) and the OS it is planned for."""
    d = plan.device
    on = plan.context.os.capitalize()
    if d.vendor == "cpu":
        return f"plan for {d.name} (the host's CPU, no GPU) on {on}"
    kind = "integrated" if d.integrated else "discrete"
    numbering = numbering_of(d.vendor)
    where = "" if d.index is None else f"{numbering} {d.index}: "
    return f"plan for {where}{d.name} ({d.gfx}, {d.family}, {kind}) on {on}"


def plan_text(
    plan: Plan, device_row: Mapping[str, Any], verbose: bool = False, columns: int | None = None
) -> list[str]:
    """The plan for people: what strata sets and why; ``verbose`` adds the switches left to
    the engine's built-ins. A reason that does not fit in ``columns`` goes on its own lines."""
    lines = [
        plan_heading(plan),
        f"plugin: {device_row['reason']}",
        "package: "
        + (f"{plan.package.name} (ROCm {plan.package.rocm})" if plan.package else "none"),
    ]
    everything = {**plan.switches, **plan.args}
    column = max(len(n) for n in everything) + 12
    unset = sum(r.source == "builtin" for r in everything.values())
    for source, title in SOURCE_TITLES.items():
        rows = sorted((n, r) for n, r in everything.items() if r.source == source)
        if not rows or (source == "builtin" and not verbose):
            continue
        lines += ["", f"{title}:"]
        for name, r in rows:
            shown = (
                name
                if r.value is None
                else (f"{name} {r.value}" if name.startswith("--") else f"{name}={r.value}")
            )
            lines += people.entry(f"  {shown}", r.reason, column, columns)
    if unset and not verbose:
        more = people.counted(unset, "more switch", "more switches")
        lines += ["", f"{more} unset: the engine's built-ins (-v lists them)"]
    if plan.extra_env:
        lines += ["", "other variables from the run config:"]
        lines += [f"  {k}={v}" for k, v in sorted(plan.extra_env.items())]
    if plan.kernels:
        lines += ["", "kernels:"]
        at = max(len(op) for op in plan.kernels) + 4
        for op, c in plan.kernels.items():
            lines += people.entry(f"  {op}", f"{c.variant}: {c.reason}", at, columns)
    if plan.host:
        threads = plan.host.threads
        lines += ["", f"host threads: {threads.summary()} ({threads.reason})"]
    if plan.pictures:
        reader = f"the {plan.pictures.reader.upper()} reader" if plan.pictures.reader else "unknown"
        lines += ["", f"pictures: {reader} ({plan.pictures.reason})"]
        lines += [f"  note: {note}" for note in plan.pictures.notes]
    if plan.log:
        lines += ["", "start lines:"] + [f"  {line}" for line in plan.log]
    return people.lines_for(lines, columns)


def explain_text(plan: Plan, name: str, switch: Switch, columns: int | None = None) -> list[str]:
    """Where one switch's value came from, what it means and what it accepts."""
    resolved = plan.explain(name)
    value = "unset" if resolved.value is None else resolved.value
    lines = [
        f"{name} = {value} ({resolved.source}): {resolved.reason}",
        f"  meaning: {switch.meaning}",
        f"  accepts: {', '.join(switch.values)}; applies to {switch.applies}; "
        f"{'changes' if switch.changes_bits else 'keeps'} bits",
        f"  unset, the engine does: {switch.builtin}",
    ]
    if switch.section:
        lines.append(f"  reference: AMD_HIP.md, {switch.section}")
    return people.lines_for(lines, columns)


def warn(lines: Sequence[str]) -> None:
    for line in lines:
        log.warning(line)
