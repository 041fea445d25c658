// topk's stage 1: the cells at or above the row's key into its candidates, from every workgroup
// of the row (topk.hip says how the stages run).

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
