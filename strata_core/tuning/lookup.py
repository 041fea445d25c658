"""Which tuning table a run takes, and why (AMD_HIP.md "Tuning tables", "rocBLAS table").

hipBLASLt: ``STRATA_HIPBLASLT_TUNING=<file>`` is always kept (with a warning when its header
names another architecture or version). Otherwise, with STRATA_HIPBLASLT_TABLE on (the
default only on gfx1151), the first valid ``<arch>-hipblaslt-<version>.txt`` in the search
folders: ``tuning/`` beside the engine, ``$STRATA_TUNING_DIR``, the plugin's own tables.

rocBLAS: ``STRATA_ROCBLAS_TUNING=<file or folder>``; otherwise on gfx103x the first valid
``<arch>-rocblas-<version>.txt`` in the same folders.

cuBLASLt (NVIDIA cards): as hipBLASLt, with STRATA_CUBLASLT_TUNING and STRATA_CUBLASLT_TABLE
(off unless asked for), ``<sm_NN>-cublaslt-<version>.txt``.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from ..answer_cache import Recorder
from ..api.arch import HIPBLASLT as HIPBLASLT_LIBRARY
from ..api.arch import ROCBLAS as ROCBLAS_LIBRARY
from ..api.arch import ArchRecord
from ..api.switches import Resolved
from .kinds import CUBLASLT, HIPBLASLT, HOST, ROCBLAS, Kind
from .versions import LibraryVersion

if TYPE_CHECKING:  # a table is read only where one is found
    from .tables import Table


@attrs.frozen
class TuningDecision:
    table: str | None
    used: bool
    reason: str
    rows: int | None = None
    log: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    loaded: Table | None = attrs.field(default=None, eq=False, repr=False)
    #: what tells the engine where the table is (AMD_HIP.md: "setup points the engine at the
    #: directory when a table for the architecture exists"); empty where the user named it
    engine_env: Mapping[str, str] = attrs.field(factory=dict)


def data_dir(env: Mapping[str, str]) -> Path:
    """Where calibration writes tables by default: $XDG_DATA_HOME/strata/tuning."""
    base = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local/share")
    return Path(base) / "strata" / "tuning"


def search_dirs(exe: str | None, env: Mapping[str, str], plugin_dirs: Sequence[Path]) -> list[Path]:
    """``tuning/`` beside the engine binary, then $STRATA_TUNING_DIR, then the plugin's."""
    dirs = []
    if exe:
        dirs.append(Path(exe).resolve().parent / "tuning")
    dirs += [Path(p) for p in env.get("STRATA_TUNING_DIR", "").split(os.pathsep) if p]
    return dirs + list(plugin_dirs)


def _enabled(kind: Kind, table: Table) -> tuple[str, ...]:
    rows = len(table.rows)
    if kind is HIPBLASLT:
        return (
            f"hipBLASLt tuning table: {table.path} ({rows} rows, {table.arch}, "
            f"version {table.version})",
            f"prefill gemm: hipBLASLt tuning enabled ({rows} rows, {table.arch}, "
            f"version {table.version})",
        )
    return (f"{kind.library} tuning enabled ({rows} rows, {table.arch}, version {table.version})",)


def _not_used(kind: Kind, reason: str) -> str:
    if kind is HIPBLASLT:
        return f"hipBLASLt tuning table: none ({reason})"
    return f"{kind.library} tuning disabled ({reason})"


def _load(path: Path, recorder: Recorder) -> tuple[Table | None, list[str]]:
    from .tables import TableError, read

    try:
        return read(path, recorder), []
    except TableError as error:
        return None, list(error.problems)


def _forced(
    kind: Kind, variable: str, path: Path, gfx: str, version: LibraryVersion, recorder: Recorder
) -> TuningDecision:
    table, problems = _load(path, recorder)
    if table is None:
        reason = f"{variable}={path} is refused: {problems[0]}"
        more = [f"{variable}: {p}" for p in problems]
        return TuningDecision(
            str(path), False, reason, log=(_not_used(kind, reason),), warnings=tuple(more)
        )
    warnings = []
    if table.kind is not kind:
        warnings.append(
            f"{variable}={path} is a {table.kind.library} table, not a "
            f"{kind.library} one; kept as set"
        )
    elif table.arch != gfx or (version.version and table.version != version.version):
        runtime = version.version or "an unknown version"
        warnings.append(
            f"{variable}={path} names {table.arch} version {table.version}; this "
            f"card is {gfx} with {kind.library} {runtime}; kept as set"
        )
    return TuningDecision(
        str(path),
        True,
        f"{variable} is set (always kept)",
        len(table.rows),
        _enabled(kind, table),
        tuple(warnings),
        table,
    )


def find_table(
    kind: Kind,
    arch: str,
    version: LibraryVersion,
    dirs: Sequence[Path],
    recorder: Recorder | None = None,
) -> TuningDecision:
    """The first valid table for this architecture and version in ``dirs``."""
    recorder = recorder or Recorder()
    if version.version is None:
        reason = f"{kind.library} version unknown ({version.how})"
        if kind in (HIPBLASLT, ROCBLAS):  # plan's --hipblaslt and --rocblas
            reason += f"; --{kind.name} gives it for planning"
        return TuningDecision(None, False, reason, log=(_not_used(kind, reason),))
    name = kind.file_name(arch, version.version)
    warnings: list[str] = []
    for folder in dirs:
        path = folder / name
        if name not in recorder.list_dir(folder) or not path.is_file():
            continue
        table, problems = _load(path, recorder)
        if table is None:
            warnings += [f"{kind.library} table refused: {p}" for p in problems]
            continue
        if (table.kind, table.arch, table.version) != (kind, arch, version.version):
            warnings.append(
                f"{path}: its header names {table.kind.magic} {table.arch} "
                f"{table.version}, not what its name says; refused"
            )
            continue
        told = folder if kind is ROCBLAS else path  # STRATA_ROCBLAS_TUNING takes a folder
        return TuningDecision(
            str(path),
            True,
            f"{name} matches {arch} and {kind.library} {version.version}",
            len(table.rows),
            _enabled(kind, table),
            tuple(warnings),
            table,
            {kind.variable: str(told)} if kind.variable else {},
        )
    others = sorted(
        {
            entry
            for folder in dirs
            for entry in recorder.list_dir(folder)
            if fnmatch.fnmatchcase(entry, f"{arch}-{kind.name}-*.txt")
        }
        - {name}
    )
    where = ", ".join(str(d) for d in dirs) or "no folder"
    reason = f"no {name} in {where}"
    if others:
        reason += f" (there: {', '.join(others)})"
    return TuningDecision(
        None, False, reason, log=(_not_used(kind, reason),), warnings=tuple(warnings)
    )


def _no_hipblaslt(arch: ArchRecord) -> str | None:
    """Why the engine runs no hipBLASLt on this target (AMD_HIP.md, "gfx906" and "RDNA2"), or
    None where it may (a target no plugin describes included)."""
    gfx = arch.target
    if not arch.described_by or arch.table_library == HIPBLASLT_LIBRARY:
        return None
    if arch.table_library == ROCBLAS_LIBRARY:
        return (
            f"{gfx}: hipBLASLt ships no gfx1030 kernels, so there is no hipBLASLt table and "
            "the plain hipBLAS path runs"
        )
    return f"{gfx}: hipBLASLt is not used"


def decide_hipblaslt(
    arch: ArchRecord,
    switches: Mapping[str, Resolved],
    version: LibraryVersion,
    dirs: Sequence[Path],
    recorder: Recorder | None = None,
) -> TuningDecision:
    recorder, gfx = recorder or Recorder(), arch.target
    forced = switches["STRATA_HIPBLASLT_TUNING"].value
    no_hipblaslt = _no_hipblaslt(arch)
    if no_hipblaslt:
        warnings = (
            (f"STRATA_HIPBLASLT_TUNING={forced} is not used: {no_hipblaslt}",) if forced else ()
        )
        return TuningDecision(
            None, False, no_hipblaslt, log=(_not_used(HIPBLASLT, no_hipblaslt),), warnings=warnings
        )
    off_by_default = (
        f"off by default on {gfx}: a table changes rounding, so packaged engines "
        "take it by default only on gfx1151; STRATA_HIPBLASLT_TABLE=on takes it"
    )
    return _by_switches(HIPBLASLT, gfx, switches, version, dirs, recorder, off_by_default)


def _by_switches(
    kind: Kind,
    target: str,
    switches: Mapping[str, Resolved],
    version: LibraryVersion,
    dirs: Sequence[Path],
    recorder: Recorder,
    off_by_default: str,
) -> TuningDecision:
    """STRATA_<KIND>_TUNING's file, always kept; else with STRATA_<KIND>_TABLE=on the table
    that matches; else none, and why."""
    prefix = f"STRATA_{kind.name.upper()}"
    forced = switches[f"{prefix}_TUNING"].value
    if forced:
        return _forced(kind, f"{prefix}_TUNING", Path(forced), target, version, recorder)
    table_switch = switches[f"{prefix}_TABLE"]
    if table_switch.value == "on":
        return find_table(kind, target, version, dirs, recorder)
    if table_switch.value == "off":
        reason = f"{prefix}_TABLE=off ({table_switch.source})"
    else:
        reason = off_by_default
    return TuningDecision(None, False, reason, log=(_not_used(kind, reason),))


def decide_rocblas(
    arch: ArchRecord,
    switches: Mapping[str, Resolved],
    version: LibraryVersion,
    dirs: Sequence[Path],
    recorder: Recorder | None = None,
) -> TuningDecision:
    recorder, gfx = recorder or Recorder(), arch.target
    forced = switches["STRATA_ROCBLAS_TUNING"].value
    if forced:
        if recorder.is_dir(forced):
            found = find_table(ROCBLAS, gfx, version, [Path(forced)], recorder)
            return attrs.evolve(found, engine_env={})  # the user's own variable
        return _forced(ROCBLAS, "STRATA_ROCBLAS_TUNING", Path(forced), gfx, version, recorder)
    library = arch.table_library
    if library != ROCBLAS_LIBRARY:
        return TuningDecision(
            None, False, f"rocBLAS tables serve gfx103x; {gfx} uses {library or 'no table'}"
        )
    return find_table(ROCBLAS, gfx, version, dirs, recorder)


def decide_cublaslt(
    target: str,
    switches: Mapping[str, Resolved],
    version: LibraryVersion,
    dirs: Sequence[Path],
    recorder: Recorder | None = None,
) -> TuningDecision:
    recorder = recorder or Recorder()
    if "STRATA_CUBLASLT_TABLE" not in switches:
        return TuningDecision(None, False, "the plugin of this card declares no cuBLASLt table")
    off_by_default = (
        "off by default: a table changes rounding, and a table is taken by default only on "
        "gfx1151; STRATA_CUBLASLT_TABLE=on takes it"
    )
    return _by_switches(CUBLASLT, target, switches, version, dirs, recorder, off_by_default)


def decide_host(
    isa: str, version: str, dirs: Sequence[Path], recorder: Recorder | None = None
) -> TuningDecision:
    return find_table(HOST, isa, LibraryVersion(version, "this process"), dirs, recorder)
