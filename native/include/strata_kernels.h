/* The strata kernel ABI, shared by the host (CPU) library and the HIP kernel libraries.
 *
 * Every library exports strata_abi_version() and strata_operations(); a loader refuses a
 * library whose ABI version it does not know. All sizes are element counts; all functions
 * return STRATA_OK or a negative STRATA_E_* status and never abort.
 *
 * Q8_0 weights are planar: qs[rows][cols] int8 and d[rows][cols / 32] IEEE half scales,
 * so that block b of row r is qs[r][32b .. 32b + 31] * d[r][b]. Activations are quantized
 * the same way: xq[cols] int8 with xd[cols / 32] float scales.
 */
#ifndef STRATA_KERNELS_H
#define STRATA_KERNELS_H

#include <stdint.h>

/* 6: every GPU kernel waits for the kernel before it (grid_handover) before it touches
 * memory, so that a launch may overlap that kernel's end */
#define STRATA_KERNEL_ABI_VERSION 6
#define STRATA_Q8_BLOCK 32

#define STRATA_OK 0
#define STRATA_E_ARGUMENT -1   /* a size or pointer the kernel cannot take */
#define STRATA_E_NOMEM -2      /* scratch memory could not be allocated */

/* Variants of strata_topk, as AMD_HIP.md names the engine's kernels. */
#define STRATA_TOPK_AUTO 0     /* a decode step's band for n: see strata_topk_variant_for */
#define STRATA_TOPK_REGISTER 1 /* the register kernel (host: a threshold-filtered min-heap) */
#define STRATA_TOPK_WIDE 2     /* the wide kernel: a sampled threshold, then the candidates */
#define STRATA_TOPK_OLD 3      /* the original kernel (GPU: the reference radix; host: insertion) */

/* Variants of strata_router_topk. */
#define STRATA_ROUTER_FAST 0   /* vectorised max passes */
#define STRATA_ROUTER_PORTABLE 1

/* Limits of the HIP kernels (the host kernels have none). */
#define STRATA_ROUTER_MAX_K 32
#define STRATA_TOPK_MAX_K 2048
#define STRATA_EXPERT_MAX_EXPERTS 4096 /* experts of strata_expert_matvec_q8_0 */

/* The GPU code objects (HIP, and PTX for NVIDIA) have kernels of the same names and arguments
 * (d as half), read strata_abi_version and strata_operations as device globals, and add
 *   strata_prompt_gemm(const half *a, const half *w, float *c, int64_t m, int64_t n, int64_t k)
 * computing c[m][n] = a[m][k] . w[n][k] (the host runs its prompt GEMM through numpy's BLAS),
 * and, as the card's read bandwidth,
 *   strata_read_bytes(const uint32x4 *buffer, int64_t words, uint32_t *sink)
 * reading words of 16 bytes with any grid (the host's strata_read_bytes below does the same).
 * Their strata_topk takes two arguments more, (uint64_t *scratch, int stage), and runs in
 * stages, each a launch over all queries (the source says how).
 * The declarations below are the host library's exports. */
#ifndef STRATA_HIP_KERNELS

int strata_abi_version(void);
/* Comma-separated operation names: "matvec_q8_0,expert_matvec_q8_0,router_topk,topk". */
const char *strata_operations(void);
/* The instruction set the kernels run with: "avx512vnni", "avxvnni", "avx2" or "baseline";
 * the best the CPU has until strata_set_isa names another. */
const char *strata_isa(void);
/* Run the kernels with this instruction set; STRATA_E_ARGUMENT for an unknown name or one
 * the CPU lacks (the choice is the caller's: the library reads no environment). */
int strata_set_isa(const char *name);
/* Threads for the multi-threaded kernels; 0 means one per core. Returns the count in use. */
int strata_set_threads(int threads);

/* y[r] = sum over blocks of d[r][b] * xd[b] * dot(qs[r][b], xq[b]); cols a multiple of 32. */
int strata_matvec_q8_0(const int8_t *qs, const uint16_t *d, const int8_t *xq, const float *xd,
                       float *y, int64_t rows, int64_t cols);

/* The MoE expert step, a grouped matvec_q8_0: qs[experts][rows][cols] and d[experts][rows][cols
 * / 32] hold the experts' weights, ids[tokens][k] the experts each token chose (0 <= id <
 * experts), xq[tokens][cols] and xd[tokens][cols / 32] each token's activations; for each pair
 * p = token * k + slot, y[p][r] = the matvec of expert ids[p]'s row r with token's
 * activations. The pairs are grouped by expert, so that each chosen expert's weights are read
 * once a call however many tokens chose it; the experts run on threads. */
int strata_expert_matvec_q8_0(const int8_t *qs, const uint16_t *d, const int32_t *ids,
                              const int8_t *xq, const float *xd, float *y, int64_t experts,
                              int64_t tokens, int k, int64_t rows, int64_t cols);

/* For each token: the k experts with the largest logits (ties: lower id first), in
 * descending order, and their softmax weights over those k (they sum to 1). */
int strata_router_topk(const float *logits, int64_t tokens, int64_t experts, int k,
                       int32_t *ids, float *weights, int variant);

/* For each of queries rows of n scores (row q at scores + q * stride): the k largest (ties:
 * lower index first), descending, at ids + q * k and values + q * k; NaN counts as smallest.
 * The rows run on threads. */
int strata_topk(const float *scores, int64_t queries, int64_t n, int64_t stride, int k,
                int32_t *ids, float *values, int variant);
/* The engine's band for n cells on a decode step (prompt_read 0, what STRATA_TOPK_AUTO takes)
 * or a prompt read (prompt_read 1). */
int strata_topk_variant_for(int64_t n, int prompt_read);

/* Reads bytes (a multiple of 8) with every thread and returns a checksum: the measure of
 * the machine's read bandwidth that matvec speeds are reported against. */
uint64_t strata_read_bytes(const void *buffer, int64_t bytes);

#endif /* STRATA_HIP_KERNELS */

#endif
