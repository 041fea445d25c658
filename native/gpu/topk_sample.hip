// topk's stage 0: the key that about 4k cells of a row should reach, from a sample of the row
// (topk.hip says how the stages run).

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
