"""The host kernel library's file and its load through cffi (ABI mode, from this package's
folder, never unloaded), with no numpy: OpenMP's wait policy set where the load starts
OpenMP, and the kernel ABI checked."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import StrataError

LIBRARY = Path(__file__).resolve().with_name("libstrata_host.so")
#: OMP_WAIT_POLICY as this process's OpenMP runtime read it when it started (it reads it
#: once, when the library first loads)
_openmp_started: list[str | None] = []


def _start_openmp(wait_policy: str | None) -> None:
    """Set OMP_WAIT_POLICY for the OpenMP runtime the library's first load starts; a later
    load finds it started and its policy kept."""
    if _openmp_started:
        if wait_policy not in (None, _openmp_started[0]):
            from .. import log

            log.debug(
                f"OMP_WAIT_POLICY={wait_policy}: OpenMP started in this process with "
                f"{_openmp_started[0] or 'its own policy'}, which stays"
            )
        return
    if wait_policy is not None:
        os.environ["OMP_WAIT_POLICY"] = wait_policy
    _openmp_started.append(os.environ.get("OMP_WAIT_POLICY"))


def load(path: Path = LIBRARY, wait_policy: str | None = None) -> tuple[Any, Any]:
    """The cffi module and the library at ``path``; StrataError where it is missing or of
    another kernel ABI."""
    from ._host_ffi import ffi

    if not path.is_file():
        raise StrataError(f"the host kernel library is missing at {path}; reinstall strata")
    _start_openmp(wait_policy)
    # Never unloaded: unloading a library whose OpenMP threads still exist crashes the
    # process at exit.
    lib = ffi.dlopen(str(path), ffi.RTLD_NOW | ffi.RTLD_NODELETE)
    abi = lib.strata_abi_version()
    if abi != lib.STRATA_KERNEL_ABI_VERSION:
        raise StrataError(
            f"{path} implements kernel ABI {abi}; this strata reads "
            f"ABI {lib.STRATA_KERNEL_ABI_VERSION}"
        )
    return ffi, lib
