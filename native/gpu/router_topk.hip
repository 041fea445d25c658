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
  grid_handover();
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
