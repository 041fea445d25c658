"""ggml's CPU backend as a peer of the host kernels: a local build of ggml-org/ggml, loaded
through cffi in ABI mode with the few declarations of its public API (ggml.h, ggml-cpu.h) that
the bench calls. The structs passed by value (ggml_init_params, ggml_cplan) are declared
field for field as the headers of ggml d99724f have them; every other struct stays opaque.

Each case is one graph in one context: inputs written once, ggml_graph_plan once with the
bench's thread count and its work buffer allocated once, then every call is one
ggml_graph_compute, as ggml's CPU backend runs a graph.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from cffi import FFI

#: the libraries of a shared build, in load order (each needs the ones before it)
LIBRARIES = ("libggml-base.so", "libggml-cpu.so", "libggml.so")
#: where a CMake build of ggml leaves them, under the folder the bench is given
SUBFOLDERS = (".", "src", "bin", "lib")

CDEF = """
enum ggml_type { GGML_TYPE_F32 = 0, GGML_TYPE_Q8_0 = 8, GGML_TYPE_I32 = 26 };
enum ggml_status {
    GGML_STATUS_ALLOC_FAILED = -2, GGML_STATUS_FAILED = -1,
    GGML_STATUS_SUCCESS = 0, GGML_STATUS_ABORTED = 1
};
struct ggml_context;
struct ggml_tensor;
struct ggml_cgraph;
struct ggml_threadpool;
typedef bool (*ggml_abort_callback)(void * data);

struct ggml_init_params { size_t mem_size; void * mem_buffer; bool no_alloc; };
struct ggml_cplan {
    size_t work_size;
    uint8_t * work_data;
    int n_threads;
    struct ggml_threadpool * threadpool;
    ggml_abort_callback abort_callback;
    void * abort_callback_data;
    bool use_ref;
};

const char * ggml_version(void);
const char * ggml_commit(void);
struct ggml_context * ggml_init(struct ggml_init_params params);
void ggml_free(struct ggml_context * ctx);
size_t ggml_graph_overhead(void);
struct ggml_tensor * ggml_new_tensor_2d(struct ggml_context * ctx, enum ggml_type type,
                                        int64_t ne0, int64_t ne1);
void * ggml_get_data(const struct ggml_tensor * tensor);
size_t ggml_nbytes(const struct ggml_tensor * tensor);
struct ggml_tensor * ggml_mul_mat(struct ggml_context * ctx, struct ggml_tensor * a,
                                  struct ggml_tensor * b);
struct ggml_tensor * ggml_top_k(struct ggml_context * ctx, struct ggml_tensor * a, int k);
struct ggml_tensor * ggml_soft_max(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_get_rows(struct ggml_context * ctx, struct ggml_tensor * a,
                                   struct ggml_tensor * b);
struct ggml_tensor * ggml_reshape_2d(struct ggml_context * ctx, struct ggml_tensor * a,
                                     int64_t ne0, int64_t ne1);
struct ggml_tensor * ggml_reshape_3d(struct ggml_context * ctx, struct ggml_tensor * a,
                                     int64_t ne0, int64_t ne1, int64_t ne2);
struct ggml_tensor * ggml_sum_rows(struct ggml_context * ctx, struct ggml_tensor * a);
struct ggml_tensor * ggml_div(struct ggml_context * ctx, struct ggml_tensor * a,
                              struct ggml_tensor * b);
struct ggml_cgraph * ggml_new_graph(struct ggml_context * ctx);
void ggml_build_forward_expand(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor);

int ggml_cpu_has_avx2(void);
int ggml_cpu_has_avx512(void);
int ggml_cpu_has_llamafile(void);
struct ggml_cplan ggml_graph_plan(const struct ggml_cgraph * cgraph, int n_threads,
                                  struct ggml_threadpool * threadpool);
enum ggml_status ggml_graph_compute(struct ggml_cgraph * cgraph, struct ggml_cplan * cplan);
"""

#: ggml's block_q8_0: one fp16 scale, then the 32 int8 values it scales
Q8_0_BLOCK = np.dtype([("d", "<f2"), ("qs", "i1", 32)])
#: room for the graph's own tensors (views, results) beside the inputs
SLACK = 16 << 20


class NotAGgmlBuild(Exception):
    """The folder given is not a usable shared build of ggml; the message says why."""


def find_libraries(folder: Path) -> list[Path]:
    for sub in SUBFOLDERS:
        paths = [folder / sub / name for name in LIBRARIES]
        if all(path.is_file() for path in paths):
            return paths
    raise NotAGgmlBuild(
        f"{folder} is not a shared build of ggml: no folder of {', '.join(SUBFOLDERS)} under "
        f"it holds {', '.join(LIBRARIES)} (build with -DBUILD_SHARED_LIBS=ON)"
    )


class Ggml:
    """ggml's CPU backend, loaded from a local build folder."""

    def __init__(self, folder: Path, threads: int) -> None:
        self.ffi = FFI()
        self.ffi.cdef(CDEF)
        paths = find_libraries(folder)
        handles = []
        for path in paths:
            try:
                # kept loaded for the process: OpenMP threads outlive an unload
                handles.append(
                    self.ffi.dlopen(
                        str(path), self.ffi.RTLD_NOW | self.ffi.RTLD_GLOBAL | self.ffi.RTLD_NODELETE
                    )
                )
            except OSError as error:
                reason = str(error).split("  Additionally")[0]  # cffi's ctypes fallback note
                raise NotAGgmlBuild(f"{path} does not load: {reason}") from None
        self.lib = handles[-1]
        declared = [name for name in dir(self.lib) if name.startswith("ggml_")]
        missing = [name for name in declared if not hasattr(self.lib, name)]
        if missing:
            raise NotAGgmlBuild(
                f"{paths[-1]} lacks {', '.join(missing)}: not a ggml with the CPU backend "
                "linked in (built with GGML_BACKEND_DL?)"
            )
        self.threads = threads
        self.libraries = paths

    def describe(self) -> str:
        lib, ffi = self.lib, self.ffi
        features = [
            name
            for name, has in (
                ("AVX2", lib.ggml_cpu_has_avx2),
                ("AVX512", lib.ggml_cpu_has_avx512),
                ("llamafile", lib.ggml_cpu_has_llamafile),
            )
            if has()
        ]
        version = ffi.string(lib.ggml_version()).decode()
        commit = ffi.string(lib.ggml_commit()).decode()
        return (
            f"ggml {version} ({commit}) from {self.libraries[-1].parent}: "
            f"{' '.join(features) or 'no SIMD'}"
        )

    def graph(self, input_bytes: int) -> Graph:
        return Graph(self, input_bytes)

    def matvec_q8_0(self, qs: np.ndarray, d: np.ndarray, x: np.ndarray) -> Case:
        """y = W x with W Q8_0 (the planar qs, d interleaved into ggml's blocks), x F32."""
        rows, cols = qs.shape
        g = self.graph(rows * cols // 32 * Q8_0_BLOCK.itemsize + 4 * (cols + rows))
        w = g.tensor("GGML_TYPE_Q8_0", cols, rows)
        blocks = g.array(w, Q8_0_BLOCK).reshape(rows, cols // 32)
        blocks["d"] = d
        blocks["qs"] = qs.reshape(rows, cols // 32, 32)
        vector = g.tensor("GGML_TYPE_F32", cols, 1)
        g.array(vector, np.float32)[:] = x
        y = g.lib.ggml_mul_mat(g.ctx, w, vector)
        return g.case([y], lambda: g.array(y, np.float32).copy())

    def top_k(self, scores: np.ndarray, k: int) -> Case:
        """The k highest of one row by ggml_top_k; ids in no particular order."""
        g = self.graph(4 * (scores.size + k))
        row = g.tensor("GGML_TYPE_F32", scores.size, 1)
        g.array(row, np.float32)[:] = scores
        ids = g.lib.ggml_top_k(g.ctx, row, k)
        return g.case([ids], lambda: g.array(ids, np.int32).copy())

    def router(self, logits: np.ndarray, k: int) -> Case:
        """MoE gating as llama.cpp's build_moe_ffn builds it (softmax gating, norm_w): soft_max
        over the experts, top_k, get_rows of the probabilities, divided by their sum."""
        lib = self.lib
        tokens, experts = logits.shape
        g = self.graph(4 * tokens * (2 * experts + 4 * k + 1))
        scores = g.tensor("GGML_TYPE_F32", experts, tokens)
        g.array(scores, np.float32)[:] = logits.reshape(-1)
        probs = lib.ggml_soft_max(g.ctx, scores)
        ids = lib.ggml_top_k(g.ctx, probs, k)
        picked = lib.ggml_get_rows(
            g.ctx, lib.ggml_reshape_3d(g.ctx, probs, 1, experts, tokens), ids
        )
        picked = lib.ggml_reshape_2d(g.ctx, picked, k, tokens)
        weights = lib.ggml_div(g.ctx, picked, lib.ggml_sum_rows(g.ctx, picked))
        return g.case(
            [weights],
            lambda: (
                g.array(ids, np.int32).reshape(tokens, k).copy(),
                g.array(weights, np.float32).reshape(tokens, k).copy(),
            ),
        )


class Graph:
    """One ggml context holding a graph's tensors, inputs included."""

    def __init__(self, ggml: Ggml, input_bytes: int) -> None:
        self.ggml, self.ffi, self.lib = ggml, ggml.ffi, ggml.lib
        params = self.ffi.new("struct ggml_init_params *")
        params.mem_size = input_bytes + SLACK + self.lib.ggml_graph_overhead()
        self.ctx = self.lib.ggml_init(params[0])
        if self.ctx == self.ffi.NULL:
            raise MemoryError(f"ggml_init could not allocate {params.mem_size} bytes")
        self.ctx = self.ffi.gc(self.ctx, self.lib.ggml_free)

    def tensor(self, kind: str, ne0: int, ne1: int):
        return self.lib.ggml_new_tensor_2d(self.ctx, getattr(self.lib, kind), ne0, ne1)

    def array(self, tensor, dtype) -> np.ndarray:
        """The tensor's data in place, as a flat numpy array."""
        data = self.ffi.buffer(self.lib.ggml_get_data(tensor), self.lib.ggml_nbytes(tensor))
        return np.frombuffer(data, dtype=dtype)

    def case(self, outputs, read) -> Case:
        graph = self.lib.ggml_new_graph(self.ctx)
        for output in outputs:
            self.lib.ggml_build_forward_expand(graph, output)
        return Case(self, graph, read)


class Case:
    """A planned graph: ``run()`` computes it, ``read()`` copies its results out."""

    def __init__(self, owner: Graph, graph, read) -> None:
        self.owner, self.graph, self.read = owner, graph, read
        lib, ffi = owner.lib, owner.ffi
        self.plan = ffi.new(
            "struct ggml_cplan *", lib.ggml_graph_plan(graph, owner.ggml.threads, ffi.NULL)
        )
        self.work = np.empty(max(self.plan.work_size, 1), dtype=np.uint8)
        self.plan.work_data = ffi.from_buffer("uint8_t[]", self.work)

    def run(self) -> None:
        status = self.owner.lib.ggml_graph_compute(self.graph, self.plan)
        if status != self.owner.lib.GGML_STATUS_SUCCESS:
            raise RuntimeError(f"ggml_graph_compute returned status {status}")

    def __call__(self):
        self.run()
        return self.read()
