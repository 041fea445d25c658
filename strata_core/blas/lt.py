"""cuBLASLt and hipBLASLt, bound through cffi in ABI mode (native/bindings/strata_cublaslt.h,
strata_hipblaslt.h). The two share the Lt API: a matmul descriptor, matrix layouts, a
preference, heuristics that list algorithms, and the matmul with one of them.

The GEMM is column-major in the library's terms: D (N x T) = op(A) B with A the weights
(K x N, transposed) and B the tokens (K x T), so that row-major X[T, K] and W[N, K] are
read as they are and Y[T, N] is written row-major.

The default is the heuristic's first algorithm, the one the library picks for the shape.
A table's solution id names one algorithm exactly:

- cuBLASLt: its configuration ``algo:tile:stages:splitk:reduction:swizzle:custom:inner:
  cluster`` (cublasLtMatmulAlgoInit with the algorithm id, then each configuration
  attribute), checked by cublasLtMatmulAlgoCheck before it runs;
- hipBLASLt: the solution index, the first four bytes of the algorithm.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ..errors import StrataError
from ..library_search import lacking_calls, load_first
from ..tuning.dispatch import SolutionRefused
from ..tuning.kinds import CUBLASLT, HIPBLASLT, Kind
from ..tuning.tables import DEFAULT
from .gemm import WORKSPACE_BYTES, GemmShape

#: algorithms asked of the heuristic per shape: every one it lists, as far as it lists them
HEURISTIC_COUNT = 64


@attrs.frozen
class LtApi:
    library: str
    kind: Kind
    prefix: str
    #: the name of the success status, the compute and scale types, the data types, the
    #: operations and the attribute ids, as the module's header spells them
    constants: dict[str, str]


CUBLASLT_API = LtApi(
    "cuBLASLt",
    CUBLASLT,
    "cublasLt",
    {
        "success": "CUBLAS_STATUS_SUCCESS",
        "compute": "CUBLAS_COMPUTE_32F",
        "f32": "CUDA_R_32F",
        "f16": "CUDA_R_16F",
        "op_n": "CUBLAS_OP_N",
        "op_t": "CUBLAS_OP_T",
        "transa": "CUBLASLT_MATMUL_DESC_TRANSA",
        "transb": "CUBLASLT_MATMUL_DESC_TRANSB",
        "workspace": "CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES",
    },
)
HIPBLASLT_API = LtApi(
    "hipBLASLt",
    HIPBLASLT,
    "hipblasLt",
    {
        "success": "HIPBLAS_STATUS_SUCCESS",
        "compute": "HIPBLAS_COMPUTE_32F",
        "f32": "HIP_R_32F",
        "f16": "HIP_R_16F",
        "op_n": "HIPBLAS_OP_N",
        "op_t": "HIPBLAS_OP_T",
        "transa": "HIPBLASLT_MATMUL_DESC_TRANSA",
        "transb": "HIPBLASLT_MATMUL_DESC_TRANSB",
        "workspace": "HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES",
    },
)

#: cuBLASLt's configuration attributes, in the order of a solution id
CONFIG_ATTRIBUTES = (
    "CUBLASLT_ALGO_CONFIG_ID",
    "CUBLASLT_ALGO_CONFIG_TILE_ID",
    "CUBLASLT_ALGO_CONFIG_STAGES_ID",
    "CUBLASLT_ALGO_CONFIG_SPLITK_NUM",
    "CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME",
    "CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING",
    "CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION",
    "CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID",
    "CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID",
)


def _ffi(api: LtApi) -> Any:
    if api is CUBLASLT_API:
        from ._cublaslt_ffi import ffi
    else:
        from ._hipblaslt_ffi import ffi
    return ffi


@attrs.define
class _Problem:
    """One shape's descriptors, its heuristic's algorithms, and the algorithms built from
    solution ids (None: refused when built)."""

    desc: Any
    layouts: tuple[Any, Any, Any]
    listed: dict[str, Any]
    built: dict[str, Any] = attrs.field(factory=dict)


class LtGemm:
    """One Lt library on the runtime's current device."""

    dtype = "f16"

    def __init__(self, api: LtApi, files: Sequence[str], runtime: Any) -> None:
        self.api, self.runtime = api, runtime
        self.library, self.kind = api.library, api.kind
        self.ffi = _ffi(api)
        lib, path, tried = load_first(self.ffi, files)
        if lib is None or path is None:
            raise StrataError(f"no {api.library} found (tried {', '.join(tried)})")
        lacking = lacking_calls(lib, self.ffi)
        if lacking:
            raise StrataError(f"{path} is not a {api.library} strata can use: it has {lacking}")
        self.lib, self.path = lib, path
        self.const = {key: getattr(lib, name) for key, name in api.constants.items()}
        handle = self.ffi.new(f"{api.prefix}Handle_t *")
        self._check(self._call("Create", handle), "Create")
        self.handle = handle[0]
        self.version = self._version()
        self.workspace = runtime.malloc(WORKSPACE_BYTES)
        self.problems: dict[GemmShape, _Problem] = {}
        self._one = self.ffi.new("float *", 1.0)
        self._zero = self.ffi.new("float *", 0.0)

    def _call(self, name: str, *args: Any) -> int:
        return int(getattr(self.lib, self.api.prefix + name)(*args))

    def _status(self, status: int) -> str:
        if self.api is CUBLASLT_API:
            name = self.lib.cublasLtGetStatusName(status)
            return self.ffi.string(name).decode() if name else str(status)
        return f"status {status}"

    def _check(self, status: int, call: str) -> None:
        if status != self.const["success"]:
            raise StrataError(
                f"{self.api.prefix}{call} failed: {self._status(status)} in {self.path}"
            )

    def _version(self) -> str:
        if self.api is CUBLASLT_API:
            return str(self.lib.cublasLtGetVersion())
        version = self.ffi.new("int *")
        self._check(self.lib.hipblasLtGetVersion(self.handle, version), "GetVersion")
        return str(version[0])

    def _set(self, setter: str, target: Any, attribute: str, value: int, ctype: str) -> None:
        buffer = self.ffi.new(f"{ctype} *", value)
        self._check(
            self._call(setter, target, self.const[attribute], buffer, self.ffi.sizeof(ctype)),
            setter,
        )

    def _problem(self, shape: GemmShape) -> _Problem:
        if shape in self.problems:
            return self.problems[shape]
        p, c = self.api.prefix, self.const
        desc = self.ffi.new(f"{p}MatmulDesc_t *")
        self._check(
            self._call("MatmulDescCreate", desc, c["compute"], c["f32"]), "MatmulDescCreate"
        )
        self._set("MatmulDescSetAttribute", desc[0], "transa", c["op_t"], "int32_t")
        self._set("MatmulDescSetAttribute", desc[0], "transb", c["op_n"], "int32_t")
        layouts = []
        for dtype, rows, cols in (
            (c["f16"], shape.k, shape.n),
            (c["f16"], shape.k, shape.tokens),
            (c["f32"], shape.n, shape.tokens),
        ):
            layout = self.ffi.new(f"{p}MatrixLayout_t *")
            self._check(
                self._call("MatrixLayoutCreate", layout, dtype, rows, cols, rows),
                "MatrixLayoutCreate",
            )
            layouts.append(layout[0])
        a, b, d = layouts
        pref = self.ffi.new(f"{p}MatmulPreference_t *")
        self._check(self._call("MatmulPreferenceCreate", pref), "MatmulPreferenceCreate")
        self._set("MatmulPreferenceSetAttribute", pref[0], "workspace", WORKSPACE_BYTES, "uint64_t")
        results = self.ffi.new(f"{p}MatmulHeuristicResult_t[]", HEURISTIC_COUNT)
        returned = self.ffi.new("int *")
        status = self._call(
            "MatmulAlgoGetHeuristic", self.handle, desc[0], a, b, d, d, pref[0],
            HEURISTIC_COUNT, results, returned,
        )  # fmt: skip
        self._call("MatmulPreferenceDestroy", pref[0])
        self._check(status, "MatmulAlgoGetHeuristic")
        if returned[0] == 0:
            raise StrataError(f"{self.library} lists no algorithm for the GEMM {shape}")
        listed: dict[str, Any] = {}
        for i in range(returned[0]):
            if results[i].state != c["success"]:
                continue
            algo = self.ffi.new(f"{p}MatmulAlgo_t *", results[i].algo)
            listed.setdefault(DEFAULT if not listed else self.solution_id(algo), algo)
        problem = _Problem(desc[0], (a, b, d), listed)
        self.problems[shape] = problem
        return problem

    def solution_id(self, algo: Any) -> str:
        """The table's name for an algorithm."""
        if self.api is HIPBLASLT_API:
            return str(self.ffi.cast("int32_t *", algo.data)[0])
        values = []
        for attribute in CONFIG_ATTRIBUTES:
            buffer = self.ffi.new("uint64_t *")
            self._check(
                self.lib.cublasLtMatmulAlgoConfigGetAttribute(
                    algo,
                    getattr(self.lib, attribute),
                    buffer,
                    self._size(algo, attribute),
                    self.ffi.NULL,
                ),
                "MatmulAlgoConfigGetAttribute",
            )
            values.append(str(buffer[0]))
        return ":".join(values)

    def _size(self, algo: Any, attribute: str) -> int:
        """The bytes of a configuration attribute (the library takes exactly that many)."""
        size = self.ffi.new("size_t *")
        self._check(
            self.lib.cublasLtMatmulAlgoConfigGetAttribute(
                algo, getattr(self.lib, attribute), self.ffi.NULL, 0, size
            ),
            "MatmulAlgoConfigGetAttribute",
        )
        return int(size[0])

    def build(self, shape: GemmShape, solution: str) -> Any:
        """The algorithm a solution id names for the shape; None where the library refuses
        it (an unknown algorithm, or a configuration that does not solve this shape)."""
        problem = self._problem(shape)
        if solution in problem.built:
            return problem.built[solution]
        algo = None
        if self.api is HIPBLASLT_API:
            algo = self.ffi.new("hipblasLtMatmulAlgo_t *")
            self.ffi.cast("int32_t *", algo.data)[0] = int(solution)
            algo.max_workspace_bytes = WORKSPACE_BYTES
        else:
            algo = self._cublaslt_algo(problem, solution)
        problem.built[solution] = algo
        return algo

    def _cublaslt_algo(self, problem: _Problem, solution: str) -> Any:
        ffi, lib, c = self.ffi, self.lib, self.const
        values = [int(v) for v in solution.split(":")]
        algo = ffi.new("cublasLtMatmulAlgo_t *")
        status = lib.cublasLtMatmulAlgoInit(
            self.handle, c["compute"], c["f32"], c["f16"], c["f16"], c["f32"], c["f32"],
            values[0], algo,
        )  # fmt: skip
        if status != c["success"]:
            return None
        for attribute, value in zip(CONFIG_ATTRIBUTES[1:], values[1:], strict=True):
            buffer = ffi.new("uint64_t *", value)
            status = lib.cublasLtMatmulAlgoConfigSetAttribute(
                algo, getattr(lib, attribute), buffer, self._size(algo, attribute)
            )
            if status != c["success"]:
                return None
        a, b, d = problem.layouts
        result = ffi.new("cublasLtMatmulHeuristicResult_t *")
        status = lib.cublasLtMatmulAlgoCheck(self.handle, problem.desc, a, b, d, d, algo, result)
        if status != c["success"] or result.workspaceSize > WORKSPACE_BYTES:
            return None
        return algo

    def solutions(self, shape: GemmShape) -> list[str]:
        return list(self._problem(shape).listed)

    def launcher(
        self, shape: GemmShape, solution: str, x: int, w: int, y: int, stream: int
    ) -> Callable[[], None]:
        problem = self._problem(shape)
        algo = problem.listed[DEFAULT] if solution == DEFAULT else self.build(shape, solution)
        if algo is None:
            raise SolutionRefused(f"{self.library} has no such algorithm for the GEMM {shape}")
        a, b, d = problem.layouts
        pointer = self.ffi.cast
        arguments = (
            self.handle, problem.desc, self._one, pointer("void *", w), a,
            pointer("void *", x), b, self._zero, pointer("void *", y), d, pointer("void *", y),
            d, algo, pointer("void *", self.runtime.address(self.workspace)), WORKSPACE_BYTES,
            pointer("void *", stream),
        )  # fmt: skip
        matmul = getattr(self.lib, self.api.prefix + "Matmul")

        def launch() -> None:
            status = matmul(*arguments)
            if status != self.const["success"]:
                message = f"{self.api.prefix}Matmul returned {self._status(status)}"
                if solution != DEFAULT:
                    raise SolutionRefused(message)
                raise StrataError(f"{message} for the GEMM {shape} with the default algorithm")

        return launch

    def close(self) -> None:
        for problem in self.problems.values():
            for layout in problem.layouts:
                self._call("MatrixLayoutDestroy", layout)
            self._call("MatmulDescDestroy", problem.desc)
        self.problems.clear()
        self._call("Destroy", self.handle)
        self.runtime.free(self.workspace)
