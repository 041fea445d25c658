// expert_pairs_q8_0, the expert step where no expert is named twice (one token's k picks): pair
// p's rows are a matvec_q8_0 of expert ids[p] with token p / k's activations into y[p], and the
// pairs' groups of rows follow one another in the grid as one matvec's do, so that the step
// reads as a matvec of pairs x rows rows (with the matvec's registers, not the grouped step's):
// matvec_rows and matvec_split of matvec_q8_0.hip.

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
  grid_handover();
  if (pairs == 0) return;
  switch (matvec_split(pairs * ((rows + MATVEC_ROWS - 1) / MATVEC_ROWS))) {
  case 8: expert_pair_group<8>(qs, d, ids, xq, xd, y, pairs, k, rows, cols); break;
  case 4: expert_pair_group<4>(qs, d, ids, xq, xd, y, pairs, k, rows, cols); break;
  case 2: expert_pair_group<2>(qs, d, ids, xq, xd, y, pairs, k, rows, cols); break;
  default: expert_pair_group<1>(qs, d, ids, xq, xd, y, pairs, k, rows, cols);
  }
}
