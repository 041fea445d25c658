"""The JSON record a bench writes with --json FILE, from which bench/results_page.py draws
docs/results.md: the machine, the date, the commit measured, the read rate that each share
of read is of, and each case (a kernel on one shape) with its median time, the bytes it
reads, its share of read, and its peers' figures on the same inputs.

    {"schema": 1, "bench": "host_kernels", "date": "2026-12-07T03:00:00Z",
     "commit": "bd7d54e1a2b3", "machine": {"kind": "cpu", "name": "AMD EPYC", ...},
     "read": {"what": "DRAM read, 1 GiB", "gbs": 29.8},
     "cases": [{"kernel": "matvec_q8_0", "shape": "16384x32768", "variant": "avx512vnni",
                "seconds": 0.019, "bytes": 570425344, "gbs": 30.0, "share_of_read": 1.01,
                "peers": [{"peer": "ggml", "call": "mul_mat", "seconds": 0.021, ...}]}],
     "extras": [{"name": "one launch (read kernel, 16 B)", "seconds": 3.6e-06}]}
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from strata_core.files import write_atomic

SCHEMA = 1
GB = 1e9

Record = dict[str, Any]


def git_commit(folder: Path = Path(__file__).parent) -> str | None:
    """The checkout's commit, with -dirty where tracked files differ from it; None outside a
    checkout (a copy of the tree on a lent machine: pass --commit there)."""
    try:
        answer = subprocess.run(
            ["git", "-C", str(folder), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    if answer.returncode != 0:
        return None
    return answer.stdout.strip() or None


def rate(nbytes: int | None, seconds: float, read_gbs: float | None) -> dict[str, float | None]:
    """GB/s over ``nbytes`` and its share of the read rate, None where either is unknown."""
    gbs = nbytes / seconds / GB if nbytes else None
    return {"gbs": gbs, "share_of_read": gbs / read_gbs if gbs and read_gbs else None}


def peer(
    name: str,
    call: str,
    seconds: float,
    nbytes: int | None = None,
    read_gbs: float | None = None,
    note: str | None = None,
) -> Record:
    """A peer's figures on the case's inputs; ``note`` says where a figure not timed in this
    run comes from."""
    return {
        "peer": name, "call": call, "seconds": seconds, "bytes": nbytes,
        **rate(nbytes, seconds, read_gbs), "note": note,
    }  # fmt: skip


def case(
    kernel: str,
    shape: str,
    seconds: float,
    *,
    variant: str | None = None,
    nbytes: int | None = None,
    read_gbs: float | None = None,
    peers: Sequence[Record] = (),
    same_bytes_read_share: float | None = None,
) -> Record:
    """One kernel on one shape. ``same_bytes_read_share``: what the read itself reaches over as
    many bytes, as a share of the read rate (the GPU bench times it)."""
    return {
        "kernel": kernel, "shape": shape, "variant": variant, "seconds": seconds,
        "bytes": nbytes, **rate(nbytes, seconds, read_gbs),
        "same_bytes_read_share": same_bytes_read_share, "peers": list(peers),
    }  # fmt: skip


def record(
    bench: str,
    commit: str | None,
    machine: Record,
    read: Record,
    cases: Sequence[Record],
    extras: Sequence[Record] = (),
) -> Record:
    return {
        "schema": SCHEMA,
        "bench": bench,
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit,
        "machine": machine,
        "read": read,
        "cases": list(cases),
        "extras": list(extras),
    }


def write(path: Path, answer: Record) -> None:
    write_atomic(path, json.dumps(answer, indent=1) + "\n")
