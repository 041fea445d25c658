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
typedef int int4v __attribute__((ext_vector_type(4)));

DEVICE int dot16(int4v w, int4v a, int acc) {
  return dot4(w.w, a.w, dot4(w.z, a.z, dot4(w.y, a.y, dot4(w.x, a.x, acc))));
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
  grid_handover();
  switch (matvec_split((rows + MATVEC_ROWS - 1) / MATVEC_ROWS)) {
  case 8: matvec_group<8>(qs, d, xq, xd, y, rows, cols); break;
  case 4: matvec_group<4>(qs, d, xq, xd, y, rows, cols); break;
  case 2: matvec_group<2>(qs, d, xq, xd, y, rows, cols); break;
  default: matvec_group<1>(qs, d, xq, xd, y, rows, cols);
  }
}
