// prompt_gemm: c[m][n] = sum over k of a[m][k] * w[n][k] (w kept as N x K, the host's "wt"
// layout); half inputs, float output.

typedef _Float16 half8 __attribute__((ext_vector_type(8)));
typedef _Float16 half16 __attribute__((ext_vector_type(16)));
typedef float float8 __attribute__((ext_vector_type(8)));

#define TILE 16

DEVICE _Float16 load_or_zero(const _Float16 *matrix, int64_t row, int64_t rows, int64_t col,
                             int64_t cols) {
  return row < rows && col < cols ? matrix[row * cols + col] : (_Float16)0.0f;
}

#if defined(__GFX11__) || defined(__GFX12__)
// Which kernel this target got, for the launcher, which gives the WMMA kernel a tile a logical
// warp and the FMA kernel a tile a workgroup.
EXPORTED_DATA char strata_prompt_gemm_kind[] = "wmma";

// Each logical warp computes one 16 x 16 tile of c on the matrix cores.
KERNEL void strata_prompt_gemm(const _Float16 *a, const _Float16 *w, float *c, int64_t m,
                               int64_t n, int64_t k) {
  grid_handover();
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
EXPORTED_DATA char strata_prompt_gemm_kind[] = "fma";

// Each workgroup computes one 16 x 16 tile of c, one element per thread, from LDS tiles.
SHARED float gemm_a[TILE][TILE + 1];
SHARED float gemm_w[TILE][TILE + 1];

KERNEL void strata_prompt_gemm(const _Float16 *a, const _Float16 *w, float *c, int64_t m,
                               int64_t n, int64_t k) {
  grid_handover();
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
