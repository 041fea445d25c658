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
// left unfilled holds 0, an item below every cell's). The select is topk_select.hip's, stage 0
// topk_sample.hip and stage 1 topk_filter.hip.

// Stage 1 runs queries x parts workgroups (the grid), workgroup b on row b % queries, so that
// the workgroups running at once spread over the rows; four of its workgroups fit on an SM.
KERNEL_RESIDENT(4) void strata_topk(const float *scores, int64_t queries, int64_t n,
                                    int64_t stride, int k, int32_t *all_ids, float *all_values,
                                    int variant, topk_item *scratch, int stage) {
  grid_handover();
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
