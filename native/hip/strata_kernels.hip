// The strata kernel ABI (native/include/strata_kernels.h) as HIP kernels, one source for
// every AMD target. Built with clang alone (no HIP headers, no ROCm device libraries), so
// everything below uses clang's AMDGPU builtins.
//
// Per-architecture variants (AMD_HIP.md):
//   int8 dot4   gfx11, gfx12: __builtin_amdgcn_sudot4 (v_dot4_i32_iu8)
//               gfx103x, gfx906: __builtin_amdgcn_sdot4 (no iu8 form there)
//   prompt GEMM gfx11: WMMA, 16 halves per lane; gfx12: WMMA, 8 halves per lane
//               gfx103x, gfx906: FMA on LDS tiles
//   gfx906      wave64; a logical 32-lane warp is half of the wavefront (the compat layer)
// Every kernel runs workgroups of STRATA_BLOCK threads; the launcher reads that from the
// code object's metadata and checks it. With STRATA_EMULATION naming a header, the hardware
// primitives come from it instead (tests/fixtures/hip_emulation.h runs them on CPU threads).

#define STRATA_HIP_KERNELS  // the header's host declarations are not ours
#include "strata_kernels.h"

#define STRATA_BLOCK 256
#define WARP 32
#define WARPS_PER_BLOCK (STRATA_BLOCK / WARP)
#ifdef STRATA_EMULATION
// The primitives below for threads on the CPU (tests/fixtures/hip_emulation.h), so that the
// kernels' logic is tested where there is no GPU.
#include STRATA_EMULATION
#elif defined(__NVPTX__)
// The same primitives for NVIDIA GPUs, as PTX (the reverse of the page's gfx906 compat layer).
#include "strata_cuda_primitives.h"
#else
#define KERNEL                                                                              \
  extern "C" __attribute__((global))                                                        \
  __attribute__((amdgpu_flat_work_group_size(STRATA_BLOCK, STRATA_BLOCK)))
// On NVIDIA the kernel's registers are capped so that `blocks` workgroups fit on an SM at once;
// here it is a kernel as any other.
#define KERNEL_RESIDENT(blocks) KERNEL
#define DEVICE static __attribute__((device)) inline
#define SHARED __attribute__((shared))
#define EXPORTED_DATA extern "C" __attribute__((device)) const

#if defined(__GFX11__) || defined(__GFX12__)
#define STRATA_DOT4_IU8 1
#elif !defined(__GFX9__) && !defined(__GFX10__)
#error "strata's HIP kernels target gfx906, gfx10, gfx11 and gfx12"
#endif

DEVICE unsigned thread_id() { return __builtin_amdgcn_workitem_id_x(); }
DEVICE unsigned block_id() { return __builtin_amdgcn_workgroup_id_x(); }
DEVICE unsigned grid_size() { return __builtin_amdgcn_grid_size_x() / STRATA_BLOCK; }

DEVICE void sync_block() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

// Orders this thread's memory accesses before and after it for the whole device.
DEVICE void fence_device() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }

// Lane l of a logical warp reads lane l ^ mask of the same warp. ds_bpermute addresses the
// hardware wavefront; mask < 32 keeps a wave64 read inside its own 32-lane half.
DEVICE int warp_xor(int value, int mask) {
  unsigned lane = __builtin_amdgcn_mbcnt_lo(~0u, 0u);
#if defined(__GFX9__)
  lane = __builtin_amdgcn_mbcnt_hi(~0u, lane);
#endif
  return __builtin_amdgcn_ds_bpermute((int)((lane ^ mask) << 2), value);
}

DEVICE float exp_f32(float x) { return __builtin_expf(x); }

DEVICE int dot4(int a, int b, int acc) {
#if STRATA_DOT4_IU8
  return __builtin_amdgcn_sudot4(true, a, true, b, acc, false);
#else
  return __builtin_amdgcn_sdot4(a, b, acc, false);
#endif
}
#endif

typedef _Float16 half8 __attribute__((ext_vector_type(8)));
typedef _Float16 half16 __attribute__((ext_vector_type(16)));
typedef float float8 __attribute__((ext_vector_type(8)));

// What the host reads from the code object without a GPU: the ABI it implements and its
// operations (the kernels below).
EXPORTED_DATA int strata_abi_version = STRATA_KERNEL_ABI_VERSION;
EXPORTED_DATA char strata_operations[] =
    "matvec_q8_0,expert_matvec_q8_0,router_topk,topk,prompt_gemm,read_bytes,expert_pairs_q8_0";

DEVICE unsigned warp_lane() { return thread_id() % WARP; }

DEVICE float warp_xor(float value, int mask) {
  return __builtin_bit_cast(float, warp_xor(__builtin_bit_cast(int, value), mask));
}
DEVICE unsigned warp_xor(unsigned value, int mask) {
  return (unsigned)warp_xor((int)value, mask);
}

#ifndef __NVPTX__
// The largest and the smallest value over a logical warp (NVIDIA has an instruction for each).
DEVICE unsigned warp_max(unsigned value) {
  for (int mask = WARP / 2; mask > 0; mask /= 2) {
    unsigned other = warp_xor(value, mask);
    value = other > value ? other : value;
  }
  return value;
}
DEVICE unsigned warp_min(unsigned value) {
  for (int mask = WARP / 2; mask > 0; mask /= 2) {
    unsigned other = warp_xor(value, mask);
    value = other < value ? other : value;
  }
  return value;
}
#endif

// Scores as unsigned keys whose order is the float order; NaN ranks as -inf (and comes back
// from value_of as -inf), -0 as +0.
DEVICE unsigned order_key(float value) {
  if (value != value) value = -__builtin_inff();
  unsigned bits = value == 0.0f ? 0u : __builtin_bit_cast(unsigned, value);
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

DEVICE float value_of(unsigned key) {
  unsigned bits = (key & 0x80000000u) ? key & 0x7fffffffu : ~key;
  return __builtin_bit_cast(float, bits);
}

// (key, id) before (key', id'): larger key first, then the lower id.
DEVICE bool ranks_before(unsigned key, int id, unsigned other_key, int other_id) {
  return key > other_key || (key == other_key && id < other_id);
}

// ---------------------------------------------------------------------------------------
// matvec_q8_0: MATVEC_ROWS rows to a group of SPLIT logical warps (1, 2, 4 or 8: the most
// that the launcher's grid gives every group, so the grid alone chooses it); part p of a group
// takes the row's Q8_0 blocks 32 p + lane, 32 (p + SPLIT) + lane, ... (two 16-byte loads a block
// and row), MATVEC_UNROLL blocks of every row loaded before any is used, so that a lane has
// that many reads in flight and each activation load serves every row; the parts add their
// sums in shared memory. Splitting along K puts more warps in flight where the rows are few.
// On an H200 (bench/gpu_kernels.py) 2 rows x 2 blocks beat 1 x 2, 1 x 4, 2 x 4 and 4 x 1: 92%
// of read against 75-85% at 16384 x 32768.

#define MATVEC_ROWS 2
#define MATVEC_UNROLL 2
// The grouped expert step's rows: EXPERT_WARP_ROWS rows a warp, EXPERT_TOKENS tokens a pass
// over them, EXPERT_UNROLL blocks of each row in flight a lane. On an H200 (large-moe's 256
// experts of 2048 x 7168, k 8; 64 tokens, 221-232 experts read) 2 rows x 3 tokens x 2 blocks
// read at 77-78% against 71-72% with one row a warp (3 x 2; 74% with 3 x 1), 73-77% with 2 x 2,
// 2 x 4 or 3 x 1, 68-70% with 4 rows a warp and 62-64% with one token a pass; its registers
// capped for three workgroups an SM, 57%. One token runs expert_pairs_q8_0.
#define EXPERT_WARP_ROWS 2
#define EXPERT_UNROLL 2
#define EXPERT_TOKENS 3
typedef int int4v __attribute__((ext_vector_type(4)));

DEVICE int dot16(int4v w, int4v a, int acc) {
  return dot4(w.w, a.w, dot4(w.z, a.z, dot4(w.y, a.y, dot4(w.x, a.x, acc))));
}

// The dot products of weight rows first .. first + ROWS - 1 (the last row again from `last`
// on) with the activations of count (1..TOKENS) tokens (token t's at xq + tokens[t] * cols,
// xd + tokens[t] * cols / 32), summed over the warp: every lane returns them in sums[row][t].
// Each weight row is read once for all of them, and each activation load serves every row.
template <int ROWS, int TOKENS>
DEVICE void q8_row_dots(const int8_t *qs, const _Float16 *d, int64_t first, int64_t last,
                        const int8_t *xq, const float *xd, const int *tokens, int count,
                        int64_t cols, float (*sums)[TOKENS]) {
  int64_t blocks = cols / STRATA_Q8_BLOCK;
  const int4v *w[ROWS];
  const _Float16 *scales[ROWS];
  float acc[ROWS][TOKENS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    int64_t row = first + r < last ? first + r : last - 1;
    w[r] = (const int4v *)(qs + row * cols);
    scales[r] = d + row * blocks;
#pragma unroll
    for (int t = 0; t < TOKENS; ++t) acc[r][t] = 0.0f;
  }
  for (int64_t base = warp_lane(); base < blocks; base += WARP * EXPERT_UNROLL) {
    int4v low[ROWS][EXPERT_UNROLL], high[ROWS][EXPERT_UNROLL];
    float scale[ROWS][EXPERT_UNROLL];
#pragma unroll
    for (int u = 0; u < EXPERT_UNROLL; ++u) {
      int64_t b = base + (int64_t)WARP * u;
      bool in = b < blocks;
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        low[r][u] = in ? w[r][2 * b] : (int4v)0;
        high[r][u] = in ? w[r][2 * b + 1] : (int4v)0;
        scale[r][u] = in ? (float)scales[r][b] : 0.0f;
      }
    }
#pragma unroll
    for (int t = 0; t < TOKENS; ++t) {
      if (t >= count) break;
      const int4v *a = (const int4v *)(xq + (int64_t)tokens[t] * cols);
      const float *a_scale = xd + (int64_t)tokens[t] * blocks;
#pragma unroll
      for (int u = 0; u < EXPERT_UNROLL; ++u) {
        int64_t b = base + (int64_t)WARP * u;
        if (b >= blocks) break;
        int4v a0 = a[2 * b], a1 = a[2 * b + 1];
        float s = a_scale[b];
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
          acc[r][t] += scale[r][u] * s * (float)dot16(high[r][u], a1, dot16(low[r][u], a0, 0));
      }
    }
  }
#pragma unroll
  for (int t = 0; t < TOKENS; ++t) {
    if (t >= count) break;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      for (int mask = WARP / 2; mask > 0; mask /= 2) acc[r][t] += warp_xor(acc[r][t], mask);
      sums[r][t] = acc[r][t];
    }
  }
}

// Rows first .. first + ROWS - 1 (the last row again past the end) with one activation vector,
// over the blocks of part `part` of SPLIT (see matvec_q8_0), each activation load serving
// every row; every lane returns the sums.
template <int ROWS, int SPLIT>
DEVICE void q8_rows_dot(const int8_t *qs, const _Float16 *d, const int8_t *xq, const float *xd,
                        int64_t first, int64_t rows, int64_t cols, int part, float *sums) {
  int64_t blocks = cols / STRATA_Q8_BLOCK;
  const int4v *w[ROWS];
  const _Float16 *scales[ROWS];
  float acc[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    int64_t row = first + r < rows ? first + r : rows - 1;
    w[r] = (const int4v *)(qs + row * cols);
    scales[r] = d + row * blocks;
    acc[r] = 0.0f;
  }
  const int4v *a = (const int4v *)xq;
  const int64_t stride = (int64_t)WARP * SPLIT;
  for (int64_t base = (int64_t)WARP * part + warp_lane(); base < blocks;
       base += stride * MATVEC_UNROLL) {
    int4v low[ROWS][MATVEC_UNROLL], high[ROWS][MATVEC_UNROLL];
    float scale[ROWS][MATVEC_UNROLL];
#pragma unroll
    for (int u = 0; u < MATVEC_UNROLL; ++u) {
      int64_t b = base + stride * u;
      bool in = b < blocks;
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        low[r][u] = in ? w[r][2 * b] : (int4v)0;
        high[r][u] = in ? w[r][2 * b + 1] : (int4v)0;
        scale[r][u] = in ? (float)scales[r][b] : 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < MATVEC_UNROLL; ++u) {
      int64_t b = base + stride * u;
      if (b >= blocks) break;
      int4v a0 = a[2 * b], a1 = a[2 * b + 1];
      float a_scale = xd[b];
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
        acc[r] += scale[r][u] * a_scale * (float)dot16(high[r][u], a1, dot16(low[r][u], a0, 0));
    }
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    for (int mask = WARP / 2; mask > 0; mask /= 2) acc[r] += warp_xor(acc[r], mask);
    sums[r] = acc[r];
  }
}

SHARED float matvec_parts[WARPS_PER_BLOCK][MATVEC_ROWS];

// Part `part` of the group of SPLIT warps on rows first .. of a matvec: the parts add their sums
// in shared memory and the first writes y[first ..] (nothing from first = rows on).
template <int SPLIT>
DEVICE void matvec_rows(const int8_t *qs, const _Float16 *d, const int8_t *xq, const float *xd,
                        float *y, int64_t first, int part, int64_t rows, int64_t cols) {
  unsigned warp_in_block = thread_id() / WARP;
  float sums[MATVEC_ROWS];
  q8_rows_dot<MATVEC_ROWS, SPLIT>(qs, d, xq, xd, first, rows, cols, part, sums);
  if (SPLIT > 1) {
    if (warp_lane() == 0)
      for (int r = 0; r < MATVEC_ROWS; ++r) matvec_parts[warp_in_block][r] = sums[r];
    sync_block();
    if (part != 0) return;
    for (int r = 0; r < MATVEC_ROWS; ++r) {
      float total = 0.0f;
      for (int p = 0; p < SPLIT; ++p) total += matvec_parts[warp_in_block + p][r];
      sums[r] = total;
    }
  }
  if (warp_lane() == 0)
    for (int r = 0; r < MATVEC_ROWS && first + r < rows; ++r) y[first + r] = sums[r];
}

DEVICE int64_t warp_in_grid() {
  return (int64_t)block_id() * WARPS_PER_BLOCK + thread_id() / WARP;
}

template <int SPLIT>
DEVICE void matvec_group(const int8_t *qs, const _Float16 *d, const int8_t *xq, const float *xd,
                         float *y, int64_t rows, int64_t cols) {
  int64_t warp = warp_in_grid();
  int64_t first = warp / SPLIT * MATVEC_ROWS;
  if (SPLIT == 1 && first >= rows) return;
  matvec_rows<SPLIT>(qs, d, xq, xd, y, first, (int)(warp % SPLIT), rows, cols);
}

// The warps the grid gives every one of `groups` groups of rows: the most of 8, 4, 2 and 1.
DEVICE int matvec_split(int64_t groups) {
  int64_t warps = (int64_t)grid_size() * WARPS_PER_BLOCK;
  return groups * 8 <= warps ? 8 : groups * 4 <= warps ? 4 : groups * 2 <= warps ? 2 : 1;
}

KERNEL void strata_matvec_q8_0(const int8_t *qs, const _Float16 *d, const int8_t *xq,
                               const float *xd, float *y, int64_t rows, int64_t cols) {
  switch (matvec_split((rows + MATVEC_ROWS - 1) / MATVEC_ROWS)) {
  case 8: matvec_group<8>(qs, d, xq, xd, y, rows, cols); break;
  case 4: matvec_group<4>(qs, d, xq, xd, y, rows, cols); break;
  case 2: matvec_group<2>(qs, d, xq, xd, y, rows, cols); break;
  default: matvec_group<1>(qs, d, xq, xd, y, rows, cols);
  }
}

// ---------------------------------------------------------------------------------------
// expert_matvec_q8_0, the MoE expert step: for each (token, slot) pair p = token * k + slot,
// y[p][rows] = expert ids[p]'s rows . token's activations. Workgroup g * chunks + c takes rows
// c * EXPERT_ROWS .. of the g-th distinct expert the ids name (in expert order: each workgroup
// finds it from a bitmap of the named experts) and gathers the pairs that chose it; workgroups
// past the distinct count end at once. Pairs are gathered EXPERT_PAIRS at a time (a round each)
// and split into passes of at most EXPERT_TOKENS, as even as can be. A warp's task is one pass
// over EXPERT_WARP_ROWS rows, and the passes over the same rows go to neighbouring warps, which
// read those rows side by side rather than one pass after another. On an H100 (large-moe, 64
// tokens, three id sets, in one call) 86-87% of read became 90-91% so, and on an H200 76% became
// 78% (bench/gpu_kernels.py, 215 experts); uneven passes (3 + 1 rather than 2 + 2) were no
// faster than passes in turn.

#define EXPERT_ROWS 64
#define EXPERT_PAIRS (4 * STRATA_BLOCK)

SHARED unsigned expert_named[STRATA_EXPERT_MAX_EXPERTS / 32];
SHARED int expert_pairs[EXPERT_PAIRS];
SHARED unsigned expert_pair_count;
SHARED int expert_chosen;

// Rows first .. first + EXPERT_WARP_ROWS - 1 (up to last) of the expert for the pairs
// gathered in expert_pairs[from .. to - 1], at most EXPERT_TOKENS of them.
DEVICE void expert_rows(const int8_t *expert_qs, const _Float16 *expert_d, int64_t first,
                        int64_t last, const int8_t *xq, const float *xd, float *y, int from,
                        int to, int k, int64_t rows, int64_t cols) {
  int taken = to - from;
  int token[EXPERT_TOKENS];
  float sums[EXPERT_WARP_ROWS][EXPERT_TOKENS];
#pragma unroll
  for (int t = 0; t < EXPERT_TOKENS; ++t) token[t] = expert_pairs[from + (t < taken ? t : 0)] / k;
  q8_row_dots<EXPERT_WARP_ROWS, EXPERT_TOKENS>(expert_qs, expert_d, first, last, xq, xd, token,
                                              taken, cols, sums);
  if (warp_lane() == 0) {
#pragma unroll
    for (int t = 0; t < EXPERT_TOKENS; ++t) {
      if (t >= taken) break;
      float *out = y + (int64_t)expert_pairs[from + t] * rows;
#pragma unroll
      for (int r = 0; r < EXPERT_WARP_ROWS; ++r)
        if (first + r < last) out[first + r] = sums[r][t];
    }
  }
}

KERNEL void strata_expert_matvec_q8_0(const int8_t *qs, const _Float16 *d, const int32_t *ids,
                                      const int8_t *xq, const float *xd, float *y,
                                      int64_t experts, int64_t tokens, int k, int64_t rows,
                                      int64_t cols) {
  int64_t chunks = (rows + EXPERT_ROWS - 1) / EXPERT_ROWS;
  int64_t group = block_id() / chunks;
  int64_t first_row = (int64_t)(block_id() % chunks) * EXPERT_ROWS;
  int64_t pairs = tokens * k, blocks = cols / STRATA_Q8_BLOCK;
  int64_t words = (experts + 31) / 32;
  for (int64_t i = thread_id(); i < words; i += STRATA_BLOCK) expert_named[i] = 0;
  sync_block();
  for (int64_t p = thread_id(); p < pairs; p += STRATA_BLOCK) {
    unsigned id = (unsigned)ids[p];
    if (id < (uint64_t)experts)
      __atomic_fetch_or(&expert_named[id / 32], 1u << (id % 32), __ATOMIC_RELAXED);
  }
  sync_block();
  if (thread_id() == 0) {
    int chosen = -1;
    int64_t seen = 0;
    for (int64_t i = 0; i < words && chosen < 0; ++i) {
      unsigned bits = expert_named[i];
      int named = __builtin_popcount(bits);
      if (group < seen + named) {
        for (int64_t skip = group - seen; skip > 0; --skip) bits &= bits - 1;
        chosen = (int)(i * 32 + __builtin_ctz(bits));
      }
      seen += named;
    }
    expert_chosen = chosen;
  }
  sync_block();
  int expert = expert_chosen;
  if (expert < 0) return;
  const int8_t *expert_qs = qs + (int64_t)expert * rows * cols;
  const _Float16 *expert_d = d + (int64_t)expert * rows * blocks;
  int64_t last_row = first_row + EXPERT_ROWS < rows ? first_row + EXPERT_ROWS : rows;
  for (int64_t from = 0; from < pairs; from += EXPERT_PAIRS) {
    if (thread_id() == 0) expert_pair_count = 0;
    sync_block();
    int64_t to = from + EXPERT_PAIRS < pairs ? from + EXPERT_PAIRS : pairs;
    for (int64_t p = from + thread_id(); p < to; p += STRATA_BLOCK)
      if (ids[p] == expert)
        expert_pairs[__atomic_fetch_add(&expert_pair_count, 1u, __ATOMIC_RELAXED)] = (int)p;
    sync_block();
    int count = (int)expert_pair_count, passes = (count + EXPERT_TOKENS - 1) / EXPERT_TOKENS;
    int64_t tasks = (last_row - first_row + EXPERT_WARP_ROWS - 1) / EXPERT_WARP_ROWS * passes;
    for (int64_t task = thread_id() / WARP; task < tasks; task += WARPS_PER_BLOCK) {
      int pass = (int)(task % passes);
      expert_rows(expert_qs, expert_d, first_row + task / passes * EXPERT_WARP_ROWS, last_row, xq,
                  xd, y, pass * count / passes, (pass + 1) * count / passes, k, rows, cols);
    }
    sync_block();
  }
}

// ---------------------------------------------------------------------------------------
// expert_pairs_q8_0, the expert step where no expert is named twice (one token's k picks): pair
// p's rows are a matvec_q8_0 of expert ids[p] with token p / k's activations into y[p], and the
// pairs' groups of rows follow one another in the grid as one matvec's do, so that the step
// reads as a matvec of pairs x rows rows (with the matvec's registers, not the grouped step's).

template <int SPLIT>
DEVICE void expert_pair_group(const int8_t *qs, const _Float16 *d, const int32_t *ids,
                              const int8_t *xq, const float *xd, float *y, int64_t pairs, int k,
                              int64_t rows, int64_t cols) {
  int64_t groups = (rows + MATVEC_ROWS - 1) / MATVEC_ROWS, blocks = cols / STRATA_Q8_BLOCK;
  int64_t warp = warp_in_grid(), group = warp / SPLIT, pair = group / groups;
  if (SPLIT == 1 && pair >= pairs) return;
  int64_t first = pair < pairs ? group % groups * MATVEC_ROWS : rows;
  pair = pair < pairs ? pair : pairs - 1;
  int64_t expert = ids[pair], token = pair / k;
  matvec_rows<SPLIT>(qs + expert * rows * cols, d + expert * rows * blocks, xq + token * cols,
                     xd + token * blocks, y + pair * rows, first, (int)(warp % SPLIT), rows,
                     cols);
}

KERNEL void strata_expert_pairs_q8_0(const int8_t *qs, const _Float16 *d, const int32_t *ids,
                                     const int8_t *xq, const float *xd, float *y, int64_t pairs,
                                     int k, int64_t rows, int64_t cols) {
  if (pairs == 0) return;
  switch (matvec_split(pairs * ((rows + MATVEC_ROWS - 1) / MATVEC_ROWS))) {
  case 8: expert_pair_group<8>(qs, d, ids, xq, xd, y, pairs, k, rows, cols); break;
  case 4: expert_pair_group<4>(qs, d, ids, xq, xd, y, pairs, k, rows, cols); break;
  case 2: expert_pair_group<2>(qs, d, ids, xq, xd, y, pairs, k, rows, cols); break;
  default: expert_pair_group<1>(qs, d, ids, xq, xd, y, pairs, k, rows, cols);
  }
}

// ---------------------------------------------------------------------------------------
// router_topk: the k best experts of each token, then a softmax over them.

DEVICE float nan_as_minus_inf(float value) { return value != value ? -__builtin_inff() : value; }

// The weight of a pick of value best when the first pick is top: an expert at -inf gets 0.
DEVICE float router_exp(float best, float top) {
  return __builtin_isfinite(best) ? exp_f32(best - top) : 0.0f;
}

// Fast: one logical warp per token. Each lane holds the order keys of its experts (lane l:
// experts l, l + 32, ... up to HELD of them: 4 for up to 128 experts, 8 for up to 256) in
// registers, sorted best first; each of k rounds is a warp maximum of the lanes' first keys
// and a warp minimum of the ids holding it, and the lane that held the winner moves its keys
// up. Wider rows read the logits again each round, taking the experts that rank after the
// previous winner. Lane j keeps pick j, and the softmax and the stores are lane-parallel.
// From 129 to 256 experts, where the grid gives every token two warps (router_halves), each
// takes half of the experts, four a lane, and the first merges the two lists of k.
#define ROUTER_HELD_MAX 8

// A lane's held keys, best first (the expert order of ranks_before), by a bitonic network.
template <int HELD>
DEVICE void router_sort(unsigned *keys, int *experts) {
#pragma unroll
  for (int size = 2; size <= HELD; size *= 2) {
#pragma unroll
    for (int stride = size / 2; stride > 0; stride /= 2) {
#pragma unroll
      for (int i = 0; i < HELD; ++i) {
        int j = i ^ stride;
        bool first_best = (i & size) == 0;
        if (j > i && ranks_before(keys[j], experts[j], keys[i], experts[i]) == first_best) {
          unsigned key = keys[i];
          int expert = experts[i];
          keys[i] = keys[j];
          experts[i] = experts[j];
          keys[j] = key;
          experts[j] = expert;
        }
      }
    }
  }
}

// Keys of experts first + lane + 32 i (i < HELD; 0, below every score, from `end` on), read
// before any is used, with their ids: a lane's held keys, sorted.
template <int HELD>
DEVICE void router_hold(const float *row, int64_t first, int64_t end, unsigned *keys,
                        int *experts_held) {
  float values[HELD];
#pragma unroll
  for (int i = 0; i < HELD; ++i) {
    int64_t e = first + warp_lane() + (int64_t)WARP * i;
    values[i] = e < end ? row[e] : 0.0f;
  }
#pragma unroll
  for (int i = 0; i < HELD; ++i) {
    int64_t e = first + warp_lane() + (int64_t)WARP * i;
    keys[i] = e < end ? order_key(values[i]) : 0u;
    experts_held[i] = (int)e;
  }
  router_sort<HELD>(keys, experts_held);
}

// The k best of the keys the warp holds: lane j gets pick j; returns the first.
template <int HELD>
DEVICE unsigned router_rounds(unsigned *keys, int *experts_held, int k, unsigned *my_key,
                              int *my_id) {
  unsigned first_key = 0;
  for (int j = 0; j < k; ++j) {
    unsigned key = warp_max(keys[0]);
    int id = (int)warp_min(keys[0] == key ? (unsigned)experts_held[0] : 0xffffffffu);
    if (experts_held[0] == id) {
#pragma unroll
      for (int i = 0; i + 1 < HELD; ++i) {
        keys[i] = keys[i + 1];
        experts_held[i] = experts_held[i + 1];
      }
      keys[HELD - 1] = 0;
    }
    if (j == 0) first_key = key;
    if (warp_lane() == (unsigned)j) {
      *my_key = key;
      *my_id = id;
    }
  }
  return first_key;
}

// The k best of experts past WARP * HELD, the logits read again each round; returns the first.
DEVICE unsigned router_wide_rounds(const float *row, int64_t experts, int k, unsigned *my_key,
                                   int *my_id) {
  unsigned last_key = 0xffffffffu, first_key = 0;
  int last_id = -1;
  for (int j = 0; j < k; ++j) {
    unsigned key = 0;
    int id = 0x7fffffff;
    for (int64_t e = warp_lane(); e < experts; e += WARP) {
      unsigned candidate = order_key(row[e]);
      bool after_last = ranks_before(last_key, last_id, candidate, (int)e);
      if (after_last && ranks_before(candidate, (int)e, key, id)) {
        key = candidate;
        id = (int)e;
      }
    }
    unsigned top = warp_max(key);
    id = (int)warp_min(key == top ? (unsigned)id : 0xffffffffu);
    if (j == 0) first_key = top;
    if (warp_lane() == (unsigned)j) {
      *my_key = top;
      *my_id = id;
    }
    last_key = top;
    last_id = id;
  }
  return first_key;
}

DEVICE float warp_sum(float value) {
  for (int mask = WARP / 2; mask > 0; mask /= 2) value += warp_xor(value, mask);
  return value;
}

template <int HELD>
DEVICE void router_fast(const float *logits, int64_t tokens, int64_t experts, int k,
                        int32_t *ids, float *weights) {
  int64_t token = (int64_t)block_id() * WARPS_PER_BLOCK + thread_id() / WARP;
  if (token >= tokens) return;
  const float *row = logits + token * experts;
  unsigned lane = warp_lane(), my_key = 0, first_key;
  int my_id = 0;
  if (experts <= (int64_t)WARP * HELD) {
    unsigned keys[HELD];
    int experts_held[HELD];
    router_hold<HELD>(row, 0, experts, keys, experts_held);
    first_key = router_rounds<HELD>(keys, experts_held, k, &my_key, &my_id);
  } else {
    first_key = router_wide_rounds(row, experts, k, &my_key, &my_id);
  }
  float weight = lane < (unsigned)k ? router_exp(value_of(my_key), value_of(first_key)) : 0.0f;
  float total = warp_sum(weight);
  if (lane < (unsigned)k) {
    ids[token * k + lane] = my_id;
    weights[token * k + lane] = weight / total;
  }
}

SHARED unsigned router_half_keys[WARPS_PER_BLOCK][WARP];
SHARED int router_half_ids[WARPS_PER_BLOCK][WARP];

// Two warps a token: warp 2 t + h takes experts h * WARP * HELD .. of token t, and the first
// places each of the 2 k picks (pick x: list x / k, rank x % k there; lane l takes x = l and
// l + 32) at its rank in its own list plus the picks of the other that rank before it.
DEVICE void router_halves(const float *logits, int64_t tokens, int64_t experts, int k,
                          int32_t *ids, float *weights) {
  const int HELD = ROUTER_HELD_MAX / 2;
  unsigned warp_in_block = thread_id() / WARP, lane = warp_lane();
  int64_t token = ((int64_t)block_id() * WARPS_PER_BLOCK + warp_in_block) / 2;
  int half = (int)(warp_in_block % 2);
  bool real = token < tokens;
  const float *row = logits + (real ? token : 0) * experts;
  unsigned keys[HELD];
  int experts_held[HELD];
  router_hold<HELD>(row, (int64_t)half * WARP * HELD, real ? experts : 0, keys, experts_held);
  unsigned my_key = 0;
  int my_id = 0;
  unsigned first_key = router_rounds<HELD>(keys, experts_held, k, &my_key, &my_id);
  router_half_keys[warp_in_block][lane] = my_key;
  router_half_ids[warp_in_block][lane] = my_id;
  sync_block();
  if (half != 0 || !real) return;
  unsigned (*both_keys)[WARP] = &router_half_keys[warp_in_block];
  int(*both_ids)[WARP] = &router_half_ids[warp_in_block];
  unsigned other_first = both_keys[1][0];
  if (other_first > first_key) first_key = other_first;
  unsigned key[2];
  int id[2], rank[2];
  float weight[2], total = 0.0f;
  for (int s = 0; s < 2; ++s) {
    int x = (int)lane + WARP * s;
    bool in = x < 2 * k;
    rank[s] = k;  // not a pick: not written
    weight[s] = 0.0f;
    if (WARP * s >= 2 * k) continue;  // no lane's pick there (the second, for k up to 16)
    int list = in ? x / k : 0, j = in ? x % k : 0;
    key[s] = both_keys[list][j];
    id[s] = both_ids[list][j];
    int before = j;
#pragma unroll 8
    for (int i = 0; i < k; ++i)
      before += ranks_before(both_keys[1 - list][i], both_ids[1 - list][i], key[s], id[s]);
    if (in) rank[s] = before;
    weight[s] = rank[s] < k ? router_exp(value_of(key[s]), value_of(first_key)) : 0.0f;
    total += weight[s];
  }
  total = warp_sum(total);
  for (int s = 0; s < 2; ++s)
    if (rank[s] < k) {
      ids[token * k + rank[s]] = id[s];
      weights[token * k + rank[s]] = weight[s] / total;
    }
}

// Portable: one thread per token, insertion into a sorted list of k.
DEVICE void router_portable(const float *logits, int64_t tokens, int64_t experts, int k,
                            int32_t *ids, float *weights) {
  int64_t token = (int64_t)block_id() * STRATA_BLOCK + thread_id();
  if (token >= tokens) return;
  const float *row = logits + token * experts;
  unsigned keys[STRATA_ROUTER_MAX_K];
  int best_ids[STRATA_ROUTER_MAX_K];
  int held = 0;
  for (int e = 0; e < experts; ++e) {
    unsigned key = order_key(row[e]);
    if (held == k && !ranks_before(key, e, keys[k - 1], best_ids[k - 1])) continue;
    int at = held < k ? held++ : k - 1;
    while (at > 0 && ranks_before(key, e, keys[at - 1], best_ids[at - 1])) {
      keys[at] = keys[at - 1];
      best_ids[at] = best_ids[at - 1];
      --at;
    }
    keys[at] = key;
    best_ids[at] = e;
  }
  float top = nan_as_minus_inf(row[best_ids[0]]), total = 0.0f;
  for (int j = 0; j < k; ++j) total += router_exp(nan_as_minus_inf(row[best_ids[j]]), top);
  for (int j = 0; j < k; ++j) {
    ids[token * k + j] = best_ids[j];
    weights[token * k + j] = router_exp(nan_as_minus_inf(row[best_ids[j]]), top) / total;
  }
}

KERNEL void strata_router_topk(const float *logits, int64_t tokens, int64_t experts, int k,
                               int32_t *ids, float *weights, int variant) {
  bool two_warps = (int64_t)grid_size() * WARPS_PER_BLOCK >= 2 * tokens;
  if (variant == STRATA_ROUTER_FAST && experts <= (int64_t)WARP * ROUTER_HELD_MAX / 2)
    router_fast<ROUTER_HELD_MAX / 2>(logits, tokens, experts, k, ids, weights);
  else if (variant == STRATA_ROUTER_FAST && experts <= (int64_t)WARP * ROUTER_HELD_MAX &&
           two_warps)
    router_halves(logits, tokens, experts, k, ids, weights);
  else if (variant == STRATA_ROUTER_FAST)
    router_fast<ROUTER_HELD_MAX>(logits, tokens, experts, k, ids, weights);
  else
    router_portable(logits, tokens, experts, k, ids, weights);
}

// ---------------------------------------------------------------------------------------
// topk over `queries` rows of n cells (row q at scores + q stride): the k best of each row,
// descending, ties to the lower id, NaN as -inf. Each cell is ranked by a 64-bit item, its order
// key above the complement of its id, so that items are distinct and a larger item ranks
// before; the k best items of a row are those at or above its k-th, which a radix select finds
// (eight bits a pass, highest first, stopping as soon as the bin of the k-th holds exactly the
// picks still needed).
//
// The reference radix (STRATA_TOPK_OLD, stage 2) is that select over the row itself, a
// workgroup a row; it reads the row once a pass. The register and the wide kernel read the
// scores once, in two launches over all rows:
// - stage 0, a workgroup a row, holds a sample of the row in registers (TOPK_PIECES pieces of a
//   workgroup's width, spread over it) and selects from it, to 16 bits, a key that about 4k
//   cells of the row (and at least 16 of the sample) should reach; a row too short to sample
//   is selected whole there, as the reference does;
// - stage 1, `parts` workgroups a row (the register and the wide kernel alike), each taking
//   every parts-th piece of the row (TOPK_PIECE cells a thread, 16-byte loads where the row
//   allows, the next piece loaded while one is kept), appends the cells at or above the key
//   (compared as floats where the key's value ranks as the key does) to the row's candidates,
//   each warp at places it reserves a chunk at a time (one global atomic a chunk, so that few
//   pieces wait on one), and raises the row's largest kept key; the workgroup that finishes a
//   row last selects among the row's candidates (the radix starting below the bytes that the
//   key and that largest key share), or over the row itself where the key left fewer than k or
//   more than the scratch holds.
// scratch holds, per row, TOPK_WORDS words (the key, TOPK_REFERENCE where the row is selected
// whole, the workgroups done, the largest candidate key, the places reserved, the places left
// unfilled), after all rows' words the candidates, TOPK_CANDIDATES(k) items a row (a place
// left unfilled holds 0, an item below every cell's).

typedef unsigned long long topk_item;

#define TOPK_BINS 256
#define TOPK_BINS_PER_LANE (TOPK_BINS / WARP)
#define TOPK_PIECES 16
#define TOPK_LOADS 8
#define TOPK_SAMPLE_LAST_BIT 48
#define TOPK_REFERENCE 0xffffffffu
#define TOPK_WORDS 6
#define TOPK_CANDIDATES(k) (16 * (int64_t)(k) + 4096)
#define TOPK_PIECE 16

SHARED unsigned topk_histogram[TOPK_BINS];
SHARED topk_item topk_prefix, topk_mask;
SHARED unsigned topk_needed, topk_done, topk_count, topk_base, topk_last;
SHARED unsigned topk_warp_counts[WARPS_PER_BLOCK];
SHARED topk_item topk_picks[STRATA_TOPK_MAX_K];

DEVICE topk_item topk_item_of(float score, int64_t id) {
  return (topk_item)order_key(score) << 32 | (0xffffffffu - (unsigned)id);
}
DEVICE int topk_id_of(topk_item item) { return (int)(0xffffffffu - (unsigned)item); }

// The sum of value over the lanes below this one in its logical warp, and over the whole warp.
DEVICE unsigned warp_sum_below(unsigned value, unsigned &total) {
  unsigned lane = warp_lane(), group = value, below = 0;
  for (int mask = 1; mask < WARP; mask *= 2) {
    unsigned other = warp_xor(group, mask);
    if (lane & mask) below += other;
    group += other;
  }
  total = group;
  return below;
}

// The first of `take` consecutive places in the list *count counts, for each lane, with one
// atomic a warp; every lane of the warp calls it.
DEVICE unsigned warp_append(unsigned take, unsigned *count) {
  unsigned total, below = warp_sum_below(take, total), base = 0;
  if (warp_lane() == 0 && total) base = __atomic_fetch_add(count, total, __ATOMIC_RELAXED);
  return warp_max(base) + below;
}

// Warp 0 finds the digit of the k-th item in the histogram: lane l sums bins 255 - 8l down to
// 248 - 8l, and the lane whose span reaches the needed count walks its own bins.
DEVICE void topk_pick_digit(int shift) {
  unsigned lane = warp_lane(), top = TOPK_BINS - 1 - lane * TOPK_BINS_PER_LANE;
  unsigned needed = topk_needed, span = 0, total;  // read before the exchange, written after it
  for (unsigned b = 0; b < TOPK_BINS_PER_LANE; ++b) span += topk_histogram[top - b];
  unsigned before = warp_sum_below(span, total);
  if (before < needed && needed <= before + span) {
    needed -= before;
    unsigned digit = top;
    while (topk_histogram[digit] < needed) needed -= topk_histogram[digit--];
    topk_prefix |= (topk_item)digit << shift;
    topk_mask |= (topk_item)0xff << shift;
    topk_needed = needed;
    topk_done = topk_histogram[digit] == needed;
  }
}

// The workgroup's radix select of the k-th of its items, down to bit last: count(prefix, mask,
// shift) adds to topk_histogram the digit at shift of each item with (item & mask) == prefix.
// Afterwards exactly k items have (item & topk_mask) >= topk_prefix (with last 0; with a higher
// last, at least k do). Every item shares the bits of `common` above bit `first` + 8, so the
// select starts at bit `first`.
template <typename Count>
DEVICE void topk_radix(int k, int last, Count count, int first = 56, topk_item common = 0) {
  unsigned t = thread_id();
  if (t == 0) {
    topk_mask = first < 56 ? ~0ull << (first + 8) : 0;
    topk_prefix = common & topk_mask;
    topk_needed = (unsigned)k;
    topk_done = 0;
  }
  for (int shift = first; shift >= last; shift -= 8) {
    for (unsigned b = t; b < TOPK_BINS; b += STRATA_BLOCK) topk_histogram[b] = 0;
    sync_block();
    count(topk_prefix, topk_mask, shift);
    sync_block();
    if (t < WARP) topk_pick_digit(shift);
    sync_block();
    if (topk_done) break;
  }
}

DEVICE void topk_histogram_add(topk_item x, topk_item prefix, topk_item mask, int shift) {
  if ((x & mask) == prefix)
    __atomic_fetch_add(&topk_histogram[(x >> shift) & 0xff], 1u, __ATOMIC_RELAXED);
}

// Where a select takes its items: a row's cells, or candidates.
struct TopkItems {
  const float *row;
  const topk_item *candidates;  // null: the row's cells
};

DEVICE topk_item topk_item_at(const TopkItems &items, int64_t i) {
  return items.candidates ? items.candidates[i] : topk_item_of(items.row[i], i);
}

DEVICE topk_item warp_xor(topk_item value, int mask) {
  unsigned low = warp_xor((unsigned)value, mask), high = warp_xor((unsigned)(value >> 32), mask);
  return (topk_item)high << 32 | low;
}

// Of a place's item and its pair's, the one the place keeps: the larger at the lower place of a
// pair sorted descending (place & size clear) or at the higher of one sorted ascending.
DEVICE topk_item topk_bitonic(topk_item mine, topk_item other, unsigned place, unsigned size,
                              unsigned stride) {
  bool larger = ((place & stride) == 0) == ((place & size) == 0);
  return (mine > other) == larger ? mine : other;
}

// Bitonic sort of width items, descending, `items` a thread: place t * items + r is the thread's
// item r (threads past width / items hold zeros, in warps that hold places; `holding` is false in
// the others, which only meet the barriers). A step pairs places stride apart: within a thread
// below `items`, across a warp's lanes by shuffles below WARP threads, else through topk_picks
// (item r of thread t at r * holders + t).
template <unsigned items>
DEVICE void topk_sort(topk_item (&x)[items], unsigned width, bool holding) {
  unsigned t = thread_id(), first = t * items, holders = width / items;
  for (unsigned size = 2; size <= width; size *= 2) {
    for (unsigned stride = size / 2; stride >= items; stride /= 2) {
      unsigned mask = stride / items;
      if (mask < WARP) {
        if (holding) {
#pragma unroll
          for (unsigned r = 0; r < items; ++r)
            x[r] = topk_bitonic(x[r], warp_xor(x[r], (int)mask), first + r, size, stride);
        }
        continue;
      }
#pragma unroll
      for (unsigned r = 0; r < items; ++r)
        if (holding) topk_picks[r * holders + t] = x[r];
      sync_block();
#pragma unroll
      for (unsigned r = 0; r < items; ++r)
        if (holding)
          x[r] = topk_bitonic(x[r], topk_picks[r * holders + (t ^ mask)], first + r, size, stride);
      sync_block();
    }
    if (!holding) continue;
#pragma unroll
    for (unsigned stride = items / 2; stride > 0; stride /= 2) {
      if (stride >= size) continue;
#pragma unroll
      for (unsigned r = 0; r < items; ++r) {
        if (r & stride) continue;
        topk_item a = x[r], b = x[r + stride];
        bool swap = (b > a) == (((first + r) & size) == 0);
        x[r] = swap ? b : a;
        x[r + stride] = swap ? a : b;
      }
    }
  }
}

// The k picks gathered in topk_picks sorted, `items` a thread (the fewest that width, the
// power of two from k up, takes in a workgroup), and written as ids and the row's scores.
template <unsigned items>
DEVICE void topk_sorted_write(unsigned width, int k, const float *row, int32_t *ids,
                              float *values) {
  unsigned t = thread_id(), holders = width / items;
  topk_item x[items];
#pragma unroll
  for (unsigned r = 0; r < items; ++r) {
    unsigned at = r * holders + t;
    x[r] = t < holders && at < (unsigned)k ? topk_picks[at] : 0;
  }
  bool holding = t / WARP * WARP < holders;
  topk_sort(x, width, holding);
#pragma unroll
  for (unsigned r = 0; r < items; ++r) {
    unsigned place = t * items + r;
    if (!holding || place >= (unsigned)k) continue;
    int id = topk_id_of(x[r]);
    float value = value_of((unsigned)(x[r] >> 32));
    ids[place] = id;
    values[place] = value == 0.0f || value == -__builtin_inff() ? row[id] : value;
  }
}

// The thread's items of the batch from `from` of count: x[u] is item from + thread + u *
// STRATA_BLOCK, 0 past count.
DEVICE void topk_batch(const TopkItems &items, int64_t count, int64_t from,
                       topk_item (&x)[TOPK_LOADS]) {
#pragma unroll
  for (int u = 0; u < TOPK_LOADS; ++u) {
    int64_t at = from + thread_id() + (int64_t)u * STRATA_BLOCK;
    x[u] = at < count ? topk_item_at(items, at) : 0;
  }
}

// After a select over count items (x their only batch where held): the k picks, sorted best
// first, as ids and the row's scores (each from its key, read from the row only where the key
// stands for two scores: -inf for NaN too, +0 for -0 too).
DEVICE void topk_write(const TopkItems &items, int64_t count, bool held,
                       topk_item (&x)[TOPK_LOADS], int k, const float *row, int32_t *ids,
                       float *values) {
  unsigned t = thread_id();
  topk_item prefix = topk_prefix, mask = topk_mask;
  if (t == 0) topk_count = 0;
  sync_block();
  for (int64_t from = 0; from < count; from += TOPK_LOADS * STRATA_BLOCK) {
    if (!held) topk_batch(items, count, from, x);
    unsigned taken = 0;
#pragma unroll
    for (int u = 0; u < TOPK_LOADS; ++u)
      taken |= (unsigned)(from + t + (int64_t)u * STRATA_BLOCK < count &&
                          (x[u] & mask) >= prefix) << u;
    unsigned at = warp_append(__builtin_popcount(taken), &topk_count);
#pragma unroll
    for (int u = 0; u < TOPK_LOADS; ++u)
      if (taken >> u & 1) topk_picks[at++] = x[u];
  }
  unsigned width = 1;
  while (width < (unsigned)k) width *= 2;
  sync_block();
  if (width <= STRATA_BLOCK)
    topk_sorted_write<1>(width, k, row, ids, values);
  else if (width <= 2 * STRATA_BLOCK)
    topk_sorted_write<2>(width, k, row, ids, values);
  else if (width <= 4 * STRATA_BLOCK)
    topk_sorted_write<4>(width, k, row, ids, values);
  else
    topk_sorted_write<8>(width, k, row, ids, values);
}

// The k best of a row: among the `places` items of its candidates where they hold at least k
// cells (count) and the scratch holds them all (their keys from key up to most), else over the
// row's n cells. The items are read in batches of TOPK_LOADS a thread (all loaded before any is
// counted, so that their loads overlap), once for every pass where they are one batch.
DEVICE void topk_finish(const float *row, int64_t n, int k, unsigned count, unsigned places,
                        int64_t capacity, const topk_item *candidates, unsigned key,
                        unsigned most, int32_t *ids, float *values) {
  TopkItems items = {row, nullptr};
  int first = 56;
  if (count >= (unsigned)k && places <= capacity) {
    items.candidates = candidates;
    n = places;
    first -= key == most ? 32 : 8 * (__builtin_clz(key ^ most) / 8);
  }
  unsigned t = thread_id();
  bool held = n <= TOPK_LOADS * STRATA_BLOCK;
  topk_item x[TOPK_LOADS];
  if (held) topk_batch(items, n, 0, x);
  topk_radix(k, 0, [&](topk_item prefix, topk_item mask, int shift) {
    for (int64_t from = 0; from < n; from += TOPK_LOADS * STRATA_BLOCK) {
      if (!held) topk_batch(items, n, from, x);
#pragma unroll
      for (int u = 0; u < TOPK_LOADS; ++u)
        if (from + t + (int64_t)u * STRATA_BLOCK < n)
          topk_histogram_add(x[u], prefix, mask, shift);
    }
  }, first, (topk_item)most << 32);
  topk_write(items, n, held, x, k, row, ids, values);
}

// Stage 0: the row's key into words[0], its count and chunks done zeroed; false, with
// TOPK_REFERENCE as the count, for a row too short to sample.
DEVICE bool topk_sample(const float *row, int64_t n, int k, unsigned *words) {
  unsigned t = thread_id();
  int64_t pieces = n / (16 * STRATA_BLOCK);
  pieces = pieces < TOPK_PIECES ? pieces : TOPK_PIECES;
  int64_t sample = pieces * STRATA_BLOCK;
  int64_t rank = pieces ? (4 * (int64_t)k * sample + n - 1) / n : 0;
  rank = rank < 16 ? 16 : rank;
  if (2 * rank > sample) {
    if (t == 0) words[1] = TOPK_REFERENCE;
    return false;
  }
  int64_t spacing = n / pieces;
  unsigned keys[TOPK_PIECES];
#pragma unroll
  for (int p = 0; p < TOPK_PIECES; ++p) keys[p] = p < pieces ? order_key(row[p * spacing + t]) : 0;
  topk_radix((int)rank, TOPK_SAMPLE_LAST_BIT, [&](topk_item prefix, topk_item mask, int shift) {
#pragma unroll
    for (int p = 0; p < TOPK_PIECES; ++p)
      if (p < pieces) topk_histogram_add((topk_item)keys[p] << 32, prefix, mask, shift);
  });
  if (t == 0) {
    words[0] = (unsigned)(topk_prefix >> 32);
    words[1] = words[2] = words[3] = words[4] = words[5] = 0;
  }
  return true;
}

// Stage 1: a workgroup's pieces of the row (TOPK_PIECE cells a thread, 16-byte loads where the
// row allows) at or above the row's key into its candidates, at places each warp reserves in
// words[4] a chunk at a time (a count past capacity stands for more than the scratch holds),
// those it leaves unfilled counted in words[5], and the largest key kept into words[3]; true in
// the workgroup that finished the row last, which then sees every candidate. A thread holds the
// cells of a piece that pass as a bit mask, loads the next piece into the same registers, and
// while that load is on its way reads the few passing cells again (from the cache: a cell
// picked from registers by a run-time index would go through local memory) and keeps them.
// The row's last piece, where it is partial, is read on its own after the whole ones.
typedef float float4v __attribute__((ext_vector_type(4)));

// What stage 1 reads and writes of one row, for one of its workgroups.
struct TopkRow {
  const float *cells;
  int64_t n, part, parts;
  unsigned key;
  unsigned *words;
  topk_item *candidates;
  int64_t capacity;
};

// A warp's places in the row's candidates: [at, end) reserved and not yet filled, and how many
// places it reserves at least at a time.
struct TopkPlaces {
  unsigned at, end, chunk;
};

// The cells of a piece that pass: bit j for the thread's cell j.
struct TopkPassing {
  unsigned cells;
  int64_t from;
  bool wide;
};

// Cell j of the thread: four consecutive cells a 16-byte load (wide), or one a load.
DEVICE int64_t topk_cell(int64_t from, bool wide, unsigned j) {
  unsigned t = thread_id();
  return wide ? from + 4 * (t + (int64_t)STRATA_BLOCK * (j / 4)) + j % 4
              : from + t + (int64_t)STRATA_BLOCK * j;
}

// The thread's cells of the piece at from, inside the row (whole) or up to its end, cells past
// it as 0.
template <bool wide, bool whole>
DEVICE void topk_load(float (&cells)[TOPK_PIECE], const TopkRow &row, int64_t from) {
  if (wide) {
    const float4v *quads = (const float4v *)(row.cells + from);
#pragma unroll
    for (int j = 0; j < TOPK_PIECE; j += 4) {
      float4v four = quads[thread_id() + STRATA_BLOCK * (j / 4)];
      cells[j] = four.x;
      cells[j + 1] = four.y;
      cells[j + 2] = four.z;
      cells[j + 3] = four.w;
    }
  } else {
#pragma unroll
    for (int j = 0; j < TOPK_PIECE; ++j) {
      int64_t at = topk_cell(from, false, j);
      cells[j] = whole || at < row.n ? row.cells[at] : 0.0f;
    }
  }
}

// The cells at or above the row's key: by value (one float compare) where the key's value
// ranks cells as the key does (not at -inf, which NaN reaches), else by key.
template <bool by_value, bool wide, bool whole>
DEVICE TopkPassing topk_passing(const float (&cells)[TOPK_PIECE], const TopkRow &row,
                                int64_t from) {
  TopkPassing passing = {0, from, wide};
  float limit = value_of(row.key);
#pragma unroll
  for (int j = 0; j < TOPK_PIECE; ++j) {
    bool kept = by_value ? cells[j] >= limit : order_key(cells[j]) >= row.key;
    if (!whole) kept = kept && topk_cell(from, wide, j) < row.n;
    passing.cells |= (unsigned)kept << j;
  }
  return passing;
}

// The passing cells into the candidates, the places left reserved first; the largest key kept
// into most.
DEVICE void topk_keep(TopkPassing passing, const TopkRow &row, TopkPlaces &places,
                      unsigned &most) {
  unsigned total, at = warp_sum_below(__builtin_popcount(passing.cells), total);
  if (!total) return;
  unsigned room = places.end - places.at, base = places.at, more = 0;
  if (total <= room) {
    places.at += total;
  } else {
    unsigned want = total - room > places.chunk ? total - room : places.chunk;
    if (warp_lane() == 0) more = __atomic_fetch_add(&row.words[4], want, __ATOMIC_RELAXED);
    more = warp_max(more);
    places.at = more + total - room;
    places.end = more + want;
  }
  for (unsigned cells = passing.cells; cells; cells &= cells - 1, ++at) {
    int64_t id = topk_cell(passing.from, passing.wide, __builtin_ctz(cells));
    float cell = row.cells[id];
    unsigned cell_key = order_key(cell);
    most = cell_key > most ? cell_key : most;
    unsigned place = at < room ? base + at : more + at - room;
    if (place < row.capacity) row.candidates[place] = topk_item_of(cell, id);
  }
}

// The workgroup's pieces: every parts-th whole one from part, then the partial last one where
// it falls to this workgroup.
template <bool by_value, bool wide>
DEVICE void topk_pieces(const TopkRow &row, TopkPlaces &places, unsigned &most) {
  const int64_t per_piece = (int64_t)TOPK_PIECE * STRATA_BLOCK;
  int64_t whole = row.n / per_piece, p = row.part;
  float cells[TOPK_PIECE];
  if (p < whole) topk_load<wide, true>(cells, row, p * per_piece);
  for (; p < whole; p += row.parts) {
    TopkPassing passing = topk_passing<by_value, wide, true>(cells, row, p * per_piece);
    if (p + row.parts < whole) topk_load<wide, true>(cells, row, (p + row.parts) * per_piece);
    topk_keep(passing, row, places, most);
  }
  if (p == whole && whole * per_piece < row.n) {
    topk_load<false, false>(cells, row, p * per_piece);
    topk_keep(topk_passing<by_value, false, false>(cells, row, p * per_piece), row, places,
              most);
  }
}

// A warp reserves at least half the places the sample aims at over its share of the row at a
// time (at least one), so that the places it leaves unfilled stay below 2k a row.
DEVICE bool topk_filter(const float *cells, int64_t n, int k, int64_t part, int64_t parts,
                        bool aligned, unsigned *words, topk_item *candidates, int64_t capacity) {
  TopkRow row = {cells, n, part, parts, words[0], words, candidates, capacity};
  unsigned most = 0, chunk = (unsigned)(2 * (int64_t)k / (parts * WARPS_PER_BLOCK));
  TopkPlaces places = {0, 0, chunk ? chunk : 1};
  if (value_of(row.key) > -__builtin_inff())
    aligned ? topk_pieces<true, true>(row, places, most)
            : topk_pieces<true, false>(row, places, most);
  else
    aligned ? topk_pieces<false, true>(row, places, most)
            : topk_pieces<false, false>(row, places, most);
  for (unsigned i = places.at + warp_lane(); i < places.end && i < capacity; i += WARP)
    candidates[i] = 0;
  most = warp_max(most);
  if (warp_lane() == 0 && most) __atomic_fetch_max(&words[3], most, __ATOMIC_RELAXED);
  if (warp_lane() == 0 && places.end > places.at)
    __atomic_fetch_add(&words[5], places.end - places.at, __ATOMIC_RELAXED);
  fence_device();
  sync_block();
  if (thread_id() == 0)
    topk_last = __atomic_fetch_add(&words[2], 1u, __ATOMIC_RELAXED) == parts - 1;
  sync_block();
  if (!topk_last) return false;
  fence_device();
  return true;
}

// Stage 1 runs queries x parts workgroups (the grid), workgroup b on row b % queries, so that
// the workgroups running at once spread over the rows; four of its workgroups fit on an SM.
KERNEL_RESIDENT(4) void strata_topk(const float *scores, int64_t queries, int64_t n,
                                    int64_t stride, int k, int32_t *all_ids, float *all_values,
                                    int variant, topk_item *scratch, int stage) {
  int64_t capacity = TOPK_CANDIDATES(k);
  int64_t q = block_id() % queries;
  unsigned *words = (unsigned *)scratch + TOPK_WORDS * q;
  topk_item *candidates = scratch + queries * TOPK_WORDS / 2 + q * capacity;
  const float *row = scores + q * stride;
  int32_t *ids = all_ids + q * k;
  float *values = all_values + q * k;
  if (stage == 1) {
    if (words[1] == TOPK_REFERENCE) return;
    bool aligned = (unsigned long long)scores % 16 == 0 && stride % 4 == 0;
    if (topk_filter(row, n, k, block_id() / queries, grid_size() / queries, aligned, words,
                    candidates, capacity)) {
      unsigned places = __atomic_load_n(&words[4], __ATOMIC_RELAXED);
      topk_finish(row, n, k, places - __atomic_load_n(&words[5], __ATOMIC_RELAXED), places,
                  capacity, candidates, words[0], __atomic_load_n(&words[3], __ATOMIC_RELAXED),
                  ids, values);
    }
    return;
  }
  if (stage == 0 && topk_sample(row, n, k, words)) return;
  topk_finish(row, n, k, TOPK_REFERENCE, TOPK_REFERENCE, capacity, nullptr, 0, 0, ids, values);
}

// ---------------------------------------------------------------------------------------
// prompt_gemm: c[m][n] = sum over k of a[m][k] * w[n][k] (w kept as N x K, the host's "wt"
// layout); half inputs, float output.

#define TILE 16

DEVICE _Float16 load_or_zero(const _Float16 *matrix, int64_t row, int64_t rows, int64_t col,
                             int64_t cols) {
  return row < rows && col < cols ? matrix[row * cols + col] : (_Float16)0.0f;
}

#if defined(__GFX11__) || defined(__GFX12__)
// Each logical warp computes one 16 x 16 tile of c on the matrix cores.
KERNEL void strata_prompt_gemm(const _Float16 *a, const _Float16 *w, float *c, int64_t m,
                               int64_t n, int64_t k) {
  int64_t tiles_n = (n + TILE - 1) / TILE;
  int64_t tile = (int64_t)block_id() * WARPS_PER_BLOCK + thread_id() / WARP;
  if (tile >= tiles_n * ((m + TILE - 1) / TILE)) return;
  int64_t row0 = tile / tiles_n * TILE, col0 = tile % tiles_n * TILE;
  unsigned lane = warp_lane();
  float8 acc = {};
  for (int64_t k0 = 0; k0 < k; k0 += TILE) {
#if defined(__GFX11__)
    // gfx11: lane l holds all 16 k of row (l % 16) of a and of column (l % 16) of b;
    // result i of lane l is row 2i + l / 16.
    half16 a_part, b_part;
    for (int i = 0; i < 16; ++i) {
      a_part[i] = load_or_zero(a, row0 + lane % 16, m, k0 + i, k);
      b_part[i] = load_or_zero(w, col0 + lane % 16, n, k0 + i, k);
    }
    acc = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(a_part, b_part, acc);
#else
    // gfx12: lane l holds 8 k, (l / 16) * 8 onwards; result i of lane l is row i + 8 (l / 16).
    half8 a_part, b_part;
    for (int i = 0; i < 8; ++i) {
      a_part[i] = load_or_zero(a, row0 + lane % 16, m, k0 + lane / 16 * 8 + i, k);
      b_part[i] = load_or_zero(w, col0 + lane % 16, n, k0 + lane / 16 * 8 + i, k);
    }
    acc = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(a_part, b_part, acc);
#endif
  }
  for (int i = 0; i < 8; ++i) {
#if defined(__GFX11__)
    int64_t row = row0 + 2 * i + lane / 16;
#else
    int64_t row = row0 + i + 8 * (lane / 16);
#endif
    int64_t col = col0 + lane % 16;
    if (row < m && col < n) c[row * n + col] = acc[i];
  }
}
#else
// Each workgroup computes one 16 x 16 tile of c, one element per thread, from LDS tiles.
SHARED float gemm_a[TILE][TILE + 1];
SHARED float gemm_w[TILE][TILE + 1];

KERNEL void strata_prompt_gemm(const _Float16 *a, const _Float16 *w, float *c, int64_t m,
                               int64_t n, int64_t k) {
  int64_t tiles_n = (n + TILE - 1) / TILE;
  int64_t row0 = block_id() / tiles_n * TILE, col0 = block_id() % tiles_n * TILE;
  unsigned ty = thread_id() / TILE, tx = thread_id() % TILE;
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += TILE) {
    gemm_a[ty][tx] = (float)load_or_zero(a, row0 + ty, m, k0 + tx, k);
    gemm_w[ty][tx] = (float)load_or_zero(w, col0 + ty, n, k0 + tx, k);
    sync_block();
    for (int i = 0; i < TILE; ++i) acc = __builtin_fmaf(gemm_a[ty][i], gemm_w[tx][i], acc);
    sync_block();
  }
  if (row0 + ty < m && col0 + tx < n) c[(row0 + ty) * n + col0 + tx] = acc;
}
#endif

// read_bytes: the card's read bandwidth, the measure matvec_q8_0 is reported against. Every
// thread folds 16-byte words with a grid stride; a word is written to sink only when the fold
// equals a constant no buffer of zeros can give, so the reads cannot be dropped.
typedef unsigned uint4v __attribute__((ext_vector_type(4)));

KERNEL void strata_read_bytes(const uint4v *buffer, int64_t words, unsigned *sink) {
  unsigned fold = 0;
  int64_t stride = (int64_t)STRATA_BLOCK * grid_size();
  for (int64_t i = (int64_t)block_id() * STRATA_BLOCK + thread_id(); i < words; i += stride) {
    uint4v word = buffer[i];
    fold ^= word.x ^ word.y ^ word.z ^ word.w;
  }
  if (fold == 0x9e3779b9u) sink[0] = fold;
}
