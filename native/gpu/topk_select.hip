// topk's items, scratch layout and workgroup state, and the radix select of the k-th item with
// the sorted write of the picks that every stage ends with (topk.hip says how the stages run).

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
