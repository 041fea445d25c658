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
// faster than passes in turn. It builds on int4v and dot16 of matvec_q8_0.hip.

// The grouped expert step's rows: EXPERT_WARP_ROWS rows a warp, EXPERT_TOKENS tokens a pass
// over them, EXPERT_UNROLL blocks of each row in flight a lane. On an H200 (large-moe's 256
// experts of 2048 x 7168, k 8; 64 tokens, 221-232 experts read) 2 rows x 3 tokens x 2 blocks
// read at 77-78% against 71-72% with one row a warp (3 x 2; 74% with 3 x 1), 73-77% with 2 x 2,
// 2 x 4 or 3 x 1, 68-70% with 4 rows a warp and 62-64% with one token a pass; its registers
// capped for three workgroups an SM, 57%. One token runs expert_pairs_q8_0.
#define EXPERT_WARP_ROWS 2
#define EXPERT_UNROLL 2
#define EXPERT_TOKENS 3

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
  grid_handover();
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
