"""rocBLAS, bound through cffi in ABI mode (native/bindings/strata_rocblas.h): rocblas_gemm_ex
with the default algorithm or a solution index, and the solutions the library lists for a
problem (rocblas_gemm_ex_get_solutions). An index the library cannot use for the problem is
refused with a status (rocblas_status_invalid_value, from rocBLAS's tensile_host.cpp); rocBLAS
does not fall back by itself, so the caller does. The operands are laid out as in
strata_core.blas.lt: D (N x T) = W^T X, ldy = N."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import StrataError
from ..library_search import lacking_calls, load_first, missing_calls
from ..tuning.dispatch import SolutionRefused
from ..tuning.kinds import ROCBLAS
from ..tuning.tables import DEFAULT
from .gemm import GemmShape


#: the call that lists a problem's solutions, a beta API of rocBLAS that only tuning uses
LISTING = "rocblas_gemm_ex_get_solutions"


class RocblasGemm:
    library = "rocBLAS"
    kind = ROCBLAS

    def __init__(self, files: Sequence[str], runtime: Any, dtype: str) -> None:
        from ._rocblas_ffi import ffi

        self.ffi, self.runtime, self.dtype = ffi, runtime, dtype
        lib, path, tried = load_first(ffi, files)
        if lib is None or path is None:
            raise StrataError(f"no rocBLAS found (tried {', '.join(tried)})")
        lacking = lacking_calls(lib, ffi, (LISTING,))
        if lacking:
            raise StrataError(f"{path} is not a rocBLAS strata can use: it has {lacking}")
        #: why the solutions cannot be listed (tune lists them; a run needs none), or None
        self.listing_missing = missing_calls(lib, ffi, (LISTING,), path)
        self.lib, self.path = lib, path
        handle = ffi.new("rocblas_handle *")
        self._check(lib.rocblas_create_handle(handle), "rocblas_create_handle")
        self.handle = handle[0]
        size = ffi.new("size_t *")
        self._check(lib.rocblas_get_version_string_size(size), "rocblas_get_version_string_size")
        text = ffi.new("char[]", size[0] + 1)
        self._check(lib.rocblas_get_version_string(text, size[0] + 1), "rocblas_get_version_string")
        self.version = ffi.string(text).decode(errors="replace").strip()
        self.in_type = lib.rocblas_datatype_f16_r if dtype == "f16" else lib.rocblas_datatype_f32_r
        self._one = ffi.new("float *", 1.0)
        self._zero = ffi.new("float *", 0.0)
        self._listed: dict[GemmShape, list[str]] = {}

    def _status(self, status: int) -> str:
        name = self.lib.rocblas_status_to_string(status)
        return self.ffi.string(name).decode() if name else f"status {status}"

    def _check(self, status: int, call: str) -> None:
        if status != self.lib.rocblas_status_success:
            raise StrataError(f"{call} failed: {self._status(status)} in {self.path}")

    def _arguments(self, shape: GemmShape, x: int, w: int, y: int) -> tuple[Any, ...]:
        lib, cast, f32 = self.lib, self.ffi.cast, self.lib.rocblas_datatype_f32_r
        return (
            self.handle, lib.rocblas_operation_transpose, lib.rocblas_operation_none,
            shape.n, shape.tokens, shape.k, self._one, cast("void *", w), self.in_type, shape.k,
            cast("void *", x), self.in_type, shape.k, self._zero, cast("void *", y), f32, shape.n,
            cast("void *", y), f32, shape.n, f32,
        )  # fmt: skip

    def solutions(self, shape: GemmShape) -> list[str]:
        if self.listing_missing:
            raise StrataError(f"cannot list rocBLAS's solutions: {self.listing_missing}")
        if shape not in self._listed:
            lib, ffi = self.lib, self.ffi
            arguments = self._arguments(shape, 0, 0, 0)
            count = ffi.new("int *")
            listing = (lib.rocblas_gemm_algo_solution_index, lib.rocblas_gemm_flags_none)
            self._check(
                lib.rocblas_gemm_ex_get_solutions(*arguments, *listing, ffi.NULL, count),
                "rocblas_gemm_ex_get_solutions",
            )
            found = ffi.new("int[]", count[0])
            self._check(
                lib.rocblas_gemm_ex_get_solutions(*arguments, *listing, found, count),
                "rocblas_gemm_ex_get_solutions",
            )
            self._listed[shape] = [DEFAULT, *(str(found[i]) for i in range(count[0]))]
        return self._listed[shape]

    def launcher(
        self, shape: GemmShape, solution: str, x: int, w: int, y: int, stream: int
    ) -> Callable[[], None]:
        lib = self.lib
        if solution == DEFAULT:
            algo, index = lib.rocblas_gemm_algo_standard, 0
        else:
            algo, index = lib.rocblas_gemm_algo_solution_index, int(solution)
        arguments = (*self._arguments(shape, x, w, y), algo, index, lib.rocblas_gemm_flags_none)
        handle, on = self.handle, self.ffi.cast("void *", stream)

        def launch() -> None:
            self._check(lib.rocblas_set_stream(handle, on), "rocblas_set_stream")
            status = lib.rocblas_gemm_ex(*arguments)
            if status != lib.rocblas_status_success:
                message = f"rocblas_gemm_ex returned {self._status(status)}"
                if solution != DEFAULT:
                    raise SolutionRefused(message)
                raise StrataError(f"{message} for the GEMM {shape} with the default solution")

        return launch

    def close(self) -> None:
        self.lib.rocblas_destroy_handle(self.handle)
