"""What the commands print for people: plugins, devices, the plan and one switch explained
(their --json answers are strata_core.cli.answers's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import log
from ..api.manager import PluginRecord, PluginStatus
from ..api.records import KernelLibrary
from ..api.switches import Switch
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


def plugins_text(records: Sequence[PluginRecord], libraries: Mapping[str, KernelLibrary]) -> str:
    rows = [("name", "distribution", "version", "api", "archs", "status")]
    for r in records:
        status = r.status.value + (f": {r.why}" if r.why else "")
        library = libraries.get(r.name)
        if r.status is PluginStatus.ACTIVE and library is not None and not library.code_objects:
            # it plans, and runs nothing on a GPU
            status = "plans only: " + (library.problems or ["no code objects"])[0]
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
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths, strict=True)) + "  " + row[5]
        for row in rows
    ]
    if libraries:
        lines += ["", "kernel libraries (HIP code objects and PTX):"]
        lines += [f"  {line}" for n, lib in libraries.items() for line in library_lines(n, lib)]
    return "\n".join(lines)


def devices_text(
    rows: Sequence[Mapping[str, Any]], selection: Selection, verbose: bool = False
) -> str:
    """The cards under column headers (``*`` marks the chosen ones), each with its status and
    who runs it on the line below; ``verbose`` adds why each plugin refuses a card none runs."""
    if not rows:
        return "no GPU found"
    table = [("", "#", "card", "target", "family", "kind", "VRAM", "PCI")]
    below = []
    for row in rows:
        gfx = row["gfx"] + (
            ""
            if row["gfx"] == row["physical_gfx"]
            else f" (physical {row['physical_gfx']}, {row['override']})"
        )
        vram = "?" if row["vram_bytes"] is None else f"{row['vram_bytes'] / GIB:.1f} GiB"
        table.append(
            (
                "*" if row["selected"] else " ",
                "-" if row["index"] is None else str(row["index"]),
                row["name"],
                gfx,
                row["family"],
                "integrated" if row["integrated"] else "discrete",
                vram,
                row["pci"] or "no PCI address",
            )
        )
        role = f" [{row['role']}]" if row["role"] else ""
        refusals = row["refusals"] if verbose else []
        below.append(
            "\n".join([f"      {row['status']}; {row['reason']}{role}"]
                      + [f"        {refusal}" for refusal in refusals])
        )  # fmt: skip
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = [
        "  ".join(cell.rjust(w) if i == 1 else cell.ljust(w) for i, (cell, w) in
                  enumerate(zip(r, widths, strict=True))).rstrip()
        for r in table
    ]  # fmt: skip
    out = [lines[0]]
    for line, status in zip(lines[1:], below, strict=True):
        out += [line, status]
    chosen = ", ".join(str(i) for i in selection.indices) or "none"
    out.append(f"selected: {chosen} ({selection.reason})")
    return "\n".join(out)


SOURCE_TITLES = {
    "user": "set by you",
    "config": "from the run config",
    "arch-default": "architecture defaults",
    "igpu-set": "iGPU prompt set",
    "builtin": "engine built-in (unset)",
}


def plan_text(plan: Plan, device_row: Mapping[str, Any], verbose: bool = False) -> str:
    """The plan for people: what strata sets and why; ``verbose`` adds the switches left to
    the engine's built-ins."""
    d = plan.device
    kind = "integrated" if d.integrated else "discrete"
    numbering = "CUDA" if d.vendor == "nvidia" else "HIP"
    where = "" if d.index is None else f"{numbering} {d.index}: "
    lines = [
        f"plan for {where}{d.name} ({d.gfx}, {d.family}, {kind}) on {plan.context.os.capitalize()}",
        f"plugin: {device_row['reason']}",
        "package: "
        + (f"{plan.package.name} (ROCm {plan.package.rocm})" if plan.package else "none"),
    ]
    everything = {**plan.switches, **plan.args}
    width = max(len(n) for n in everything) + 2
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
            lines.append(f"  {shown.ljust(width + 8)}{r.reason}")
    if unset and not verbose:
        lines += ["", f"{unset} more switches unset: the engine's built-ins (-v lists them)"]
    if plan.extra_env:
        lines += ["", "other variables from the run config:"]
        lines += [f"  {k}={v}" for k, v in sorted(plan.extra_env.items())]
    if plan.kernels:
        lines += ["", "kernels:"]
        lines += [
            f"  {op.ljust(width + 8)}{c.variant}: {c.reason}" for op, c in plan.kernels.items()
        ]
    if plan.host:
        threads = plan.host.threads
        lines += ["", f"host threads: {threads.summary()} ({threads.reason})"]
    if plan.pictures:
        reader = f"the {plan.pictures.reader.upper()} reader" if plan.pictures.reader else "unknown"
        lines += ["", f"pictures: {reader} ({plan.pictures.reason})"]
        lines += [f"  note: {note}" for note in plan.pictures.notes]
    if plan.log:
        lines += ["", "start lines:"] + [f"  {line}" for line in plan.log]
    return "\n".join(lines)


def explain_text(plan: Plan, name: str, switch: Switch) -> str:
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
    return "\n".join(lines)


def warn(lines: Sequence[str]) -> None:
    for line in lines:
        log.warning(line)
