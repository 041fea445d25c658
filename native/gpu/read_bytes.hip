// read_bytes: the card's read bandwidth, the measure matvec_q8_0 is reported against. Every
// thread folds 16-byte words with a grid stride; a word is written to sink only when the fold
// equals a constant no buffer of zeros can give, so the reads cannot be dropped.
typedef unsigned uint4v __attribute__((ext_vector_type(4)));

KERNEL void strata_read_bytes(const uint4v *buffer, int64_t words, unsigned *sink) {
  grid_handover();
  unsigned fold = 0;
  int64_t stride = (int64_t)STRATA_BLOCK * grid_size();
  for (int64_t i = (int64_t)block_id() * STRATA_BLOCK + thread_id(); i < words; i += stride) {
    uint4v word = buffer[i];
    fold ^= word.x ^ word.y ^ word.z ^ word.w;
  }
  if (fold == 0x9e3779b9u) sink[0] = fold;
}
