"""Draws docs/results.md and its plots from the benches' JSON (bench/bench_json.py): for each
CPU and each card, the latest record of each bench as one table and one plot (each kernel's
share of read beside its peers', and its peers' times against its own).

    uv run python bench/results_page.py [--results DIR] [--page FILE]

Every *.json in DIR (default docs/results/) is read; the PNGs are written beside them, and a
PNG there that the page no longer shows is removed.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from strata_core.files import write_atomic  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs/results"
PAGE = ROOT / "docs/results.md"

Record = dict[str, Any]
#: the bar of a read over as many bytes as the kernel reads (the GPU bench times one)
SAME_BYTES = "a read of as many bytes"

INTRO = """\
# Measured results

This page and its plots are drawn by `bench/results_page.py` from the JSON files in
[`{plots}/`]({plots}/), which `bench/host_kernels.py --json FILE`,
`bench/gpu_kernels.py --json FILE` and `bench/gpu_step.py --json FILE` write
(`scripts/nvidia-gpu.sh run` writes them on a card's machine, `kernels` the card's). Do not
edit it: run a bench with `--json docs/results/NAME.json`, then
`uv run python bench/results_page.py`. Each machine shows its latest run of each bench.

A kernel's *share of read* is the rate at which it goes through the bytes it reads, as a share
of the read rate measured in the same run: on a CPU the host library reading 1 GiB of DRAM, on
a card the library's read kernel over 4 GiB. An input that fits in a cache can pass 100%. A
peer's share is over the bytes it reads itself (PyTorch's FP16 matvec reads nearly twice the
Q8_0 bytes). *Against* is a peer's median time over strata's: above 1, strata is faster. Times
are medians; the benches check the results before they time them (their docstrings say how).
"""


def load(folder: Path) -> list[Record]:
    """The latest record of each bench on each machine, CPUs first."""
    latest: dict[tuple[str, str, str], Record] = {}
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text())
        machine = record["machine"]
        key = (machine["kind"], machine_title(machine), record["bench"])
        if key not in latest or record["date"] > latest[key]["date"]:
            latest[key] = record
    return [latest[key] for key in sorted(latest)]


def machine_title(machine: Record) -> str:
    detail = machine.get("cpuid") if machine["kind"] == "cpu" else machine.get("target")
    return f"{machine['name']} ({detail})" if detail else machine["name"]


def slug(record: Record) -> str:
    words = f"{record['bench']} {machine_title(record['machine'])}".lower()
    return re.sub(r"[^a-z0-9]+", "-", words).strip("-")


def duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} us"


def share(value: float | None) -> str:
    return "" if value is None else f"{value:.0%}"


def case_label(case: Record) -> str:
    variant = f" ({case['variant']})" if case.get("variant") else ""
    return f"{case['kernel']} {case['shape']}{variant}"


def peer_key(peer: Record, case: Record) -> str:
    """A peer's column: its name, with its call where the case has several peers of that
    name (torch's CUDA graph and its eager calls)."""
    twice = sum(p["peer"] == peer["peer"] for p in case["peers"]) > 1
    return f"{peer['peer']}, {peer['call']}" if twice else peer["peer"]


def peer_names(cases: Iterable[Record]) -> list[str]:
    return list(dict.fromkeys(peer_key(p, case) for case in cases for p in case["peers"]))


def facts(record: Record) -> str:
    """The line under a machine's heading: what ran, when, on which commit, and the load."""
    m = record["machine"]
    when = record["date"].replace("T", " ").removesuffix("Z") + " UTC"
    commit = f"commit `{record['commit']}`" if record["commit"] else "an unknown commit"
    what_read = record["read"]["what"]
    read = f"{what_read[:1].upper()}{what_read[1:]}: {record['read']['gbs']:,.1f} GB/s"
    if m["kind"] == "cpu":
        what = (
            f"{m['isa_level']}, host kernels {m['kernels_isa']}, {m['threads']} threads on "
            f"{m['cores']} cores; {m['numpy']}; " + (m["ggml"] or "no ggml build given")
        )
        start, end = m["load_average"]
        busy = max(start, end) >= m["cores"]
        load = f"load average {start:.1f} at the start, {end:.1f} at the end" + (
            f" (at or above the {m['cores']} cores: threaded timings are skewed)" if busy else ""
        )
        return f"{what}. `{record['bench']}` on {when}, {commit}; {load}. {read}."
    driver = f"driver {m['driver']}" if m.get("driver") else "driver version not read"
    what = f"{m['code_object']}, {driver}, CUDA driver API {m['cuda_driver']}, PyTorch {m['torch']}"
    extras = "; ".join(
        f"{x['name']} {duration(x['seconds'])}" + (f", {x['gbs']:,.0f} GB/s" if "gbs" in x else "")
        for x in record["extras"]
    )
    return (
        f"{what}; medians of {m['repeats']}. `{record['bench']}` on {when}, {commit}. {read}"
        + (f"; {extras}" if extras else "")
        + "."
    )


def table(record: Record) -> list[str]:
    cases = record["cases"]
    peers = peer_names(cases)
    same = any(case.get("same_bytes_read_share") is not None for case in cases)
    head = ["kernel", "shape", "variant", "median", "GB/s", "of read"]
    head += [SAME_BYTES] * same
    head += [f"{name} (against)" for name in peers]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    notes: list[str] = []
    for case in cases:
        row = [
            f"`{case['kernel']}`",
            case["shape"],
            case.get("variant") or "",
            duration(case["seconds"]),
            f"{case['gbs']:,.1f}" if case["gbs"] is not None else "",
            share(case["share_of_read"]),
        ]
        row += [share(case.get("same_bytes_read_share"))] * same
        by_name = {peer_key(peer, case): peer for peer in case["peers"]}
        for name in peers:
            peer = by_name.get(name)
            if peer is None:
                row.append("")
                continue
            cell = f"{duration(peer['seconds'])} ({peer['seconds'] / case['seconds']:.2f}x)"
            if peer.get("note"):
                if peer["note"] not in notes:
                    notes.append(peer["note"])
                cell += "*" * (notes.index(peer["note"]) + 1)
            row.append(cell)
        lines.append("| " + " | ".join(row) + " |")
    calls = sorted({f"{p['peer']}: {p['call']}" for case in cases for p in case["peers"]})
    if calls:
        lines += ["", textwrap.fill("Peers: " + "; ".join(calls) + ".", 100)]
    lines += [f"{'*' * (i + 1)} {note}." for i, note in enumerate(notes)]
    return lines


def plot(record: Record) -> bytes:
    """Two panels: each kernel's share of read beside its peers' (and, on a card, a read of as
    many bytes); each peer's time over strata's."""
    read_cases = [case for case in record["cases"] if case["share_of_read"] is not None]
    peer_cases = [case for case in record["cases"] if case["peers"]]
    colours = {name: f"C{i}" for i, name in enumerate(["strata", *peer_names(record["cases"])])}
    colours[SAME_BYTES] = "grey"
    rows = max(len(read_cases), len(peer_cases), 1)
    figure, (left, right) = plt.subplots(
        1, 2, figsize=(13, 1.2 + 0.42 * rows), layout="constrained"
    )
    bars(left, read_cases, read_sides, colours)
    left.set_xlabel(f"% of read ({record['read']['what']}, {record['read']['gbs']:,.1f} GB/s)")
    left.axvline(100, color="grey", linewidth=0.8)
    right.set_xscale("log")
    bars(
        right,
        peer_cases,
        lambda case: [(peer_key(p, case), p["seconds"] / case["seconds"]) for p in case["peers"]],
        colours,
        base=1,
    )
    right.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}x"))
    right.axvline(1, color="grey", linewidth=0.8)
    right.set_xlabel("peer's time / strata's (above 1: strata faster)")
    figure.suptitle(f"{machine_title(record['machine'])}, {record['date'][:10]}")
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=100, metadata={"Software": None})
    plt.close(figure)
    return out.getvalue()


def read_sides(case: Record) -> list[tuple[str, float]]:
    """The percentages of read of a case's bars: strata's, a read of as many bytes, the peers'."""
    sides = [("strata", case["share_of_read"]), (SAME_BYTES, case.get("same_bytes_read_share"))]
    sides += [(peer_key(peer, case), peer["share_of_read"]) for peer in case["peers"]]
    return [(name, (value or 0) * 100) for name, value in sides]


def bars(
    axes: Any,
    cases: Sequence[Record],
    sides: Callable[[Record], list[tuple[str, float]]],
    colours: dict[str, str],
    base: float = 0,
) -> None:
    """Horizontal bars from ``base``, a group per case (top to bottom in the table's order), a
    colour per side; a side without a figure (0) is left out."""
    per_case = [[(name, value) for name, value in sides(case) if value] for case in cases]
    names = list(dict.fromkeys(name for group in per_case for name, _ in group))
    height = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        ys, values = [], []
        for row, group in enumerate(per_case):
            for side, value in group:
                if side == name:
                    ys.append(row + i * height)
                    values.append(value - base)
        axes.barh(ys, values, height=height, left=base, label=name, color=colours[name])
    axes.set_yticks([row + 0.4 - height / 2 for row in range(len(cases))])
    axes.set_yticklabels([case_label(case) for case in cases], fontsize=8)
    axes.invert_yaxis()
    if names:
        axes.legend(fontsize=8, loc="best")


def section(record: Record, plots: str) -> list[str]:
    """``plots``: the folder of the PNGs, as the page links it."""
    name = slug(record) + ".png"
    return [
        f"### {machine_title(record['machine'])}",
        "",
        textwrap.fill(facts(record), 100, break_on_hyphens=False),
        "",
        *table(record),
        "",
        f"![{record['bench']} on {machine_title(record['machine'])}]({plots}/{name})",
        "",
    ]


def page(records: Sequence[Record], plots: str) -> str:
    lines = [INTRO.format(plots=plots)]
    for kind, heading in (("cpu", "CPUs"), ("gpu", "Cards")):
        lines += [f"## {heading}", ""]
        shown = [record for record in records if record["machine"]["kind"] == kind]
        for record in shown:
            lines += section(record, plots)
        if kind == "gpu" and not shown:
            lines += [
                "Pending: no card's figures yet (the H100 and H200 runs are to come).",
                "`scripts/nvidia-gpu.sh kernels` on an NVIDIA card writes `gpu_kernels.json`.",
                "No kernel of this project has run on an AMD card yet.",
                "",
            ]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS, metavar="DIR")
    parser.add_argument("--page", type=Path, default=PAGE, metavar="FILE")
    args = parser.parse_args(argv)
    records = load(args.results)
    if not records:
        print(f"results_page: no JSON in {args.results}", file=sys.stderr)
        return 2
    pngs = {slug(record) + ".png": plot(record) for record in records}
    for name, data in pngs.items():
        write_atomic(args.results / name, data)
    for stale in set(p.name for p in args.results.glob("*.png")) - set(pngs):
        (args.results / stale).unlink()
    plots = os.path.relpath(args.results.resolve(), args.page.resolve().parent)
    write_atomic(args.page, page(records, plots))
    print(f"wrote {args.page} and {len(pngs)} plots from {len(records)} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
