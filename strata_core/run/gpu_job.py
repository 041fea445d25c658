"""What a GPU run's parent and its child (strata_core.run.gpu_child) share: the job, the
names of the files in the child's folder, and the results as named arrays. The child's entry
module imports this one, never the other way round, so that the package's face never imports
the entry that ``python -m`` runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from ..api.records import KernelChoice, Workload
from ..tuning.tables import Table
from .gpu_backend import GpuCard

JOB, RESULTS, ANSWER = "job.pickle", "results.npz", "answer.json"
#: left in FOLDER once the runtime answered its first calls (the card is open)
CONTACT = "contact"
#: where the child marks the native call it is in (strata_core.native_calls)
CALLING = "calling"


@attrs.frozen
class GpuJob:
    """What the child needs of the plan: the card, the workload and its seed, the kernel
    choices, and the prompt GEMM's library files, tuning table and verbosity."""

    card: GpuCard
    workload: Workload
    choices: Mapping[str, KernelChoice]
    gemm_libraries: tuple[str, ...] = ()
    gemm_table: Table | None = None
    gemm_verbose: bool = False
    seed: int = 0


def flatten(results: list[tuple[Any, float]]) -> dict[str, np.ndarray]:
    """The results as named arrays: ``i`` for a call's array, ``i.j`` for a tuple's parts."""
    arrays: dict[str, np.ndarray] = {}
    for i, (result, _) in enumerate(results):
        if isinstance(result, tuple):
            arrays.update({f"{i}.{j}": np.asarray(part) for j, part in enumerate(result)})
        else:
            arrays[str(i)] = np.asarray(result)
    return arrays


def unflatten(arrays: Mapping[str, np.ndarray], seconds: list[float]) -> list[tuple[Any, float]]:
    results: list[tuple[Any, float]] = []
    for i, took in enumerate(seconds):
        if str(i) in arrays:
            results.append((arrays[str(i)], took))
        else:
            parts = sorted((k for k in arrays if k.startswith(f"{i}.")), key=_part)
            results.append((tuple(arrays[k] for k in parts), took))
    return results


def _part(key: str) -> int:
    return int(key.split(".", 1)[1])
