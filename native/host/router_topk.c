/* router_topk: each token's k best experts and their softmax weights, sixteen tokens at a
 * time in AVX-512, eight in AVX2, else one at a time through topk's sorted list. */

#include "strata_kernels.h"

#include <float.h>
#include <math.h>

#include <immintrin.h>

#include "isa.h"
#include "topk.h"
#include "vector.h"

/* The fast router's limit: at most sixteen candidates a token, so k of them. */
#define ROUTER_FAST_MAX_K 16
/* Tokens from which the fast router splits its work across threads. */
#define ROUTER_PARALLEL_FROM 256

static void softmax_weights(const item *best, int k, int32_t *ids, float *weights) {
    float sum = 0.0f;
    for (int j = 0; j < k; j++) {
        ids[j] = best[j].i;
        weights[j] = best[j].v == -INFINITY ? 0.0f : expf(best[j].v - best[0].v);
        sum += weights[j];
    }
    for (int j = 0; j < k; j++) weights[j] = sum > 0 ? weights[j] / sum : 1.0f / (float)k;
}

/* The lanes of chunk c (experts 16c .. 16c + 15) that hold an expert. */
static inline __mmask16 chunk_lanes(int64_t experts, int64_t c) {
    return (__mmask16)(experts - 16 * c >= 16 ? 0xFFFF : (1u << (experts - 16 * c)) - 1);
}

/* Sixteen tokens, one a lane. First each token's sixteen column maxima (column c holds
 * experts c, c + 16, ...); the k-th largest of them bounds the token's k-th largest logit
 * from below, since those k maxima are k logits at least as large. Then the logits at or
 * above the bound (about ten of 128) are packed per token, and the k best of those few slots
 * are kept by compare-exchange, lane-wise across the tokens, with equal logits in id order.
 * NaN and -inf enter as -FLT_MAX, the tail of a partial chunk not at all. Returns the tokens
 * with more than sixteen logits at their bound (ties, mostly), which the caller sorts. */
__attribute__((target(AVX512), always_inline))
static inline __mmask16 route16_k(const float *logits, int group, int64_t experts, const int k,
                                  int32_t *ids, float *weights) {
    const __m512 lowest = _mm512_set1_ps(-FLT_MAX), none = _mm512_set1_ps(-INFINITY);
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i across = _mm512_mullo_epi32(lane, _mm512_set1_epi32(16));
    const int64_t chunks = (experts + 15) / 16;
    float table_v[16][16];
    int32_t table_i[16][16];
    __m512 top[16];
    __m512i top_i[16];

    for (int t = 0; t < 16; t++) {
        const float *row = logits + (t < group ? t : group - 1) * experts;
        __m512 colmax = none;
        for (int64_t c = 0; c < chunks; c++) {
            __mmask16 live = chunk_lanes(experts, c);
            __m512 v = _mm512_mask_loadu_ps(none, live, row + 16 * c);
            colmax = _mm512_max_ps(colmax, _mm512_mask_max_ps(none, live, v, lowest));
        }
        _mm512_storeu_ps(table_v[t], colmax);
    }
    for (int j = 0; j < k; j++) top[j] = none;
    for (int c = 0; c < 16; c++) {
        __m512 v = _mm512_i32gather_ps(across, &table_v[0][c], 4);
        for (int j = 0; j < k; j++) {
            __m512 high = _mm512_max_ps(top[j], v);
            v = _mm512_min_ps(top[j], v);
            top[j] = high;
        }
    }
    float bound[16];
    _mm512_storeu_ps(bound, top[k - 1]);

    __mmask16 overflow = 0;
    int most = 0;
    for (int t = 0; t < 16; t++) {
        _mm512_storeu_ps(table_v[t], none);
        _mm512_storeu_si512(table_i[t], _mm512_setzero_si512());
        if (t >= group) continue;
        const float *row = logits + t * experts;
        const __m512 at_least = _mm512_set1_ps(bound[t]);
        int n = 0;
        for (int64_t c = 0; c < chunks; c++) {
            __mmask16 live = chunk_lanes(experts, c);
            __m512 v = _mm512_mask_max_ps(none, live, _mm512_mask_loadu_ps(none, live, row + 16 * c),
                                          lowest);
            __mmask16 pass = _mm512_mask_cmp_ps_mask(live, v, at_least, _CMP_GE_OQ);
            int count = __builtin_popcount(pass);
            if (n + count > 16) {
                overflow |= (__mmask16)(1u << t);
                break;
            }
            __mmask16 first = (__mmask16)((1u << count) - 1);
            __m512i id = _mm512_add_epi32(lane, _mm512_set1_epi32((int)(16 * c)));
            _mm512_mask_storeu_ps(table_v[t] + n, first, _mm512_maskz_compress_ps(pass, v));
            _mm512_mask_storeu_epi32(table_i[t] + n, first, _mm512_maskz_compress_epi32(pass, id));
            n += count;
        }
        most = n > most ? n : most;
    }
    for (int j = 0; j < k; j++) {
        top[j] = none;
        top_i[j] = _mm512_setzero_si512();
    }
    for (int s = 0; s < most; s++) {
        __m512 v = _mm512_i32gather_ps(across, &table_v[0][s], 4);
        __m512i vi = _mm512_i32gather_epi32(across, &table_i[0][s], 4);
        /* The slot's logit has the highest id yet, so it passes only a smaller one; once it
         * has displaced a logit, the one carried down has a lower id than any equal below. */
        __mmask16 carried = 0;
        for (int j = 0; j < k && j <= s; j++) {
            __mmask16 better = (_mm512_cmp_ps_mask(v, top[j], _CMP_GT_OQ) & ~carried) |
                               (_mm512_cmp_ps_mask(v, top[j], _CMP_GE_OQ) & carried);
            carried |= better;
            __m512 kept = _mm512_mask_blend_ps(better, top[j], v);
            __m512i kept_i = _mm512_mask_blend_epi32(better, top_i[j], vi);
            v = _mm512_mask_blend_ps(better, v, top[j]);
            vi = _mm512_mask_blend_epi32(better, vi, top_i[j]);
            top[j] = kept;
            top_i[j] = kept_i;
        }
    }

    __m512 w[16], sum = _mm512_setzero_ps();
    for (int j = 0; j < k; j++) {
        w[j] = exp512(_mm512_sub_ps(top[j], top[0]));
        sum = _mm512_add_ps(sum, w[j]);
    }
    const __mmask16 done = (__mmask16)(((1u << group) - 1) & ~overflow);
    const __m512i out = _mm512_mullo_epi32(lane, _mm512_set1_epi32(k));
    for (int j = 0; j < k; j++) {
        __m512i at = _mm512_add_epi32(out, _mm512_set1_epi32(j));
        _mm512_mask_i32scatter_ps(weights, done, at, _mm512_div_ps(w[j], sum), 4);
        _mm512_mask_i32scatter_epi32(ids, done, at, top_i[j], 4);
    }
    return overflow;
}

/* One copy for each k up to 8, so that the k best stay in registers. */
__attribute__((target(AVX512)))
static __mmask16 route16(const float *logits, int group, int64_t experts, int k, int32_t *ids,
                         float *weights) {
    switch (k) {
    case 1: return route16_k(logits, group, experts, 1, ids, weights);
    case 2: return route16_k(logits, group, experts, 2, ids, weights);
    case 3: return route16_k(logits, group, experts, 3, ids, weights);
    case 4: return route16_k(logits, group, experts, 4, ids, weights);
    case 5: return route16_k(logits, group, experts, 5, ids, weights);
    case 6: return route16_k(logits, group, experts, 6, ids, weights);
    case 7: return route16_k(logits, group, experts, 7, ids, weights);
    case 8: return route16_k(logits, group, experts, 8, ids, weights);
    default: return route16_k(logits, group, experts, k, ids, weights);
    }
}

/* Slots a token may pack at its bound, and the width of a row of packed slots (one more
 * chunk of eight, since a chunk is stored whole). */
#define ROUTE8_SLOTS 32
#define ROUTE8_ROW (ROUTE8_SLOTS + 8)

/* For each of the 256 masks of a chunk of eight: the lanes it keeps, first. */
static int32_t left_pack[256][8];

__attribute__((constructor)) static void make_left_pack(void) {
    for (int mask = 0; mask < 256; mask++) {
        int n = 0;
        for (int lane = 0; lane < 8; lane++)
            if (mask >> lane & 1) left_pack[mask][n++] = lane;
        while (n < 8) left_pack[mask][n++] = 0;
    }
}

/* Eight tokens, one a lane: route16_k's method in AVX2. Each token's sixteen column maxima
 * (column c holds experts c, c + 16, ...); the k-th largest bounds its k-th largest logit
 * from below. The logits at or above the bound are packed per token, and the k best of those
 * slots are kept by compare-exchange, lane-wise across the tokens, equal logits in id order.
 * NaN and -inf enter as -FLT_MAX, the tail of a partial chunk not at all. Returns the tokens
 * (a bit each) with more than ROUTE8_SLOTS logits at their bound, which the caller routes the
 * portable way. */
__attribute__((target("avx2,fma"), always_inline))
static inline unsigned route8_k(const float *logits, int group, int64_t experts, const int k,
                                int32_t *ids, float *weights) {
    const __m256 lowest = _mm256_set1_ps(-FLT_MAX), none = _mm256_set1_ps(-INFINITY);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i across = _mm256_mullo_epi32(lane, _mm256_set1_epi32(ROUTE8_ROW));
    const int64_t full = experts / 16 * 16;
    float table_v[8][ROUTE8_ROW];
    int32_t table_i[8][ROUTE8_ROW] = {{0}};
    __m256 top[16];
    __m256i top_i[16];

    for (int t = 0; t < 8; t++) {
        const float *row = logits + (t < group ? t : group - 1) * experts;
        __m256 low = none, high = none;
        for (int64_t e = 0; e < full; e += 16) {
            low = _mm256_max_ps(low, _mm256_max_ps(_mm256_loadu_ps(row + e), lowest));
            high = _mm256_max_ps(high, _mm256_max_ps(_mm256_loadu_ps(row + e + 8), lowest));
        }
        _mm256_storeu_ps(table_v[t], low);
        _mm256_storeu_ps(table_v[t] + 8, high);
        for (int64_t e = full; e < experts; e++) {
            float v = row[e] >= -FLT_MAX ? row[e] : -FLT_MAX;
            if (v > table_v[t][e - full]) table_v[t][e - full] = v;
        }
    }
    for (int j = 0; j < k; j++) top[j] = none;
    for (int c = 0; c < 16; c++) {
        __m256 v = _mm256_i32gather_ps(&table_v[0][c], across, 4);
        for (int j = 0; j < k; j++) {
            __m256 high = _mm256_max_ps(top[j], v);
            v = _mm256_min_ps(top[j], v);
            top[j] = high;
        }
    }
    float bound[8];
    _mm256_storeu_ps(bound, top[k - 1]);

    unsigned overflow = 0;
    int most = 0;
    for (int t = 0; t < 8; t++) {
        for (int slot = 0; slot < ROUTE8_ROW; slot += 8) _mm256_storeu_ps(table_v[t] + slot, none);
        if (t >= group) continue;
        const float *row = logits + t * experts;
        const __m256 at_least = _mm256_set1_ps(bound[t]);
        int n = 0;
        for (int64_t e = 0; e < experts; e += 8) {
            __m256 v;
            if (e + 8 <= experts) {
                v = _mm256_max_ps(_mm256_loadu_ps(row + e), lowest);
            } else {
                float tail[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                                 -INFINITY, -INFINITY, -INFINITY, -INFINITY};
                for (int64_t x = e; x < experts; x++)
                    tail[x - e] = row[x] >= -FLT_MAX ? row[x] : -FLT_MAX;
                v = _mm256_loadu_ps(tail);
            }
            unsigned pass = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v, at_least, _CMP_GE_OQ));
            int count = __builtin_popcount(pass);
            if (n + count > ROUTE8_SLOTS) {
                overflow |= 1u << t;
                break;
            }
            __m256i order = _mm256_loadu_si256((const __m256i *)left_pack[pass]);
            __m256i id = _mm256_add_epi32(lane, _mm256_set1_epi32((int)e));
            _mm256_storeu_ps(table_v[t] + n, _mm256_permutevar8x32_ps(v, order));
            _mm256_storeu_si256((__m256i *)(table_i[t] + n), _mm256_permutevar8x32_epi32(id, order));
            n += count;
        }
        /* what the last whole store put past the packed slots is no slot */
        for (int x = n; x < n + 8 && x < ROUTE8_ROW; x++) table_v[t][x] = -INFINITY;
        most = n > most ? n : most;
    }
    for (int j = 0; j < k; j++) {
        top[j] = none;
        top_i[j] = _mm256_setzero_si256();
    }
    for (int slot = 0; slot < most; slot++) {
        __m256 v = _mm256_i32gather_ps(&table_v[0][slot], across, 4);
        __m256i vi = _mm256_i32gather_epi32(&table_i[0][slot], across, 4);
        /* The slot's logit has the highest id yet, so it passes only a smaller one; once it
         * has displaced a logit, the one carried down has a lower id than any equal below. */
        __m256 carried = _mm256_setzero_ps();
        for (int j = 0; j < k && j <= slot; j++) {
            __m256 better = _mm256_or_ps(
                _mm256_andnot_ps(carried, _mm256_cmp_ps(v, top[j], _CMP_GT_OQ)),
                _mm256_and_ps(carried, _mm256_cmp_ps(v, top[j], _CMP_GE_OQ)));
            carried = _mm256_or_ps(carried, better);
            __m256i better_i = _mm256_castps_si256(better);
            __m256 kept = _mm256_blendv_ps(top[j], v, better);
            __m256i kept_i = _mm256_blendv_epi8(top_i[j], vi, better_i);
            v = _mm256_blendv_ps(v, top[j], better);
            vi = _mm256_blendv_epi8(vi, top_i[j], better_i);
            top[j] = kept;
            top_i[j] = kept_i;
        }
    }

    __m256 w[16], sum = _mm256_setzero_ps();
    for (int j = 0; j < k; j++) {
        w[j] = exp256(_mm256_sub_ps(top[j], top[0]));
        sum = _mm256_add_ps(sum, w[j]);
    }
    float out_w[16][8];
    int32_t out_i[16][8];
    for (int j = 0; j < k; j++) {
        _mm256_storeu_ps(out_w[j], _mm256_div_ps(w[j], sum));
        _mm256_storeu_si256((__m256i *)out_i[j], top_i[j]);
    }
    for (int t = 0; t < group; t++) {
        if (overflow >> t & 1) continue;
        for (int j = 0; j < k; j++) {
            ids[t * k + j] = out_i[j][t];
            weights[t * k + j] = out_w[j][t];
        }
    }
    return overflow;
}

/* One copy for each k up to 8, so that the k best stay in registers. */
__attribute__((target("avx2,fma")))
static unsigned route8(const float *logits, int group, int64_t experts, int k, int32_t *ids,
                       float *weights) {
    switch (k) {
    case 1: return route8_k(logits, group, experts, 1, ids, weights);
    case 2: return route8_k(logits, group, experts, 2, ids, weights);
    case 3: return route8_k(logits, group, experts, 3, ids, weights);
    case 4: return route8_k(logits, group, experts, 4, ids, weights);
    case 5: return route8_k(logits, group, experts, 5, ids, weights);
    case 6: return route8_k(logits, group, experts, 6, ids, weights);
    case 7: return route8_k(logits, group, experts, 7, ids, weights);
    case 8: return route8_k(logits, group, experts, 8, ids, weights);
    default: return route8_k(logits, group, experts, k, ids, weights);
    }
}

static void route_portable(const float *logits, int64_t experts, int k, item *best) {
    old_select(best, k, logits, experts);
}

/* The tokens of a group that the vector router left to the portable one (bit u of ``left``:
 * token t + u), routed one by one. */
static void route_left(const float *logits, int64_t t, int group, unsigned left,
                       int64_t experts, int k, int32_t *ids, float *weights) {
    for (int u = 0; u < group; u++) {
        if (!(left >> u & 1)) continue;
        item best[ROUTER_FAST_MAX_K];
        route_portable(logits + (t + u) * experts, experts, k, best);
        softmax_weights(best, k, ids + (t + u) * k, weights + (t + u) * k);
    }
}

int strata_router_topk(const float *logits, int64_t tokens, int64_t experts, int k,
                       int32_t *ids, float *weights, int variant) {
    if (!logits || !ids || !weights || tokens < 0 || k <= 0 || experts < k || k > 64 ||
        experts > (1 << 24) || (variant != STRATA_ROUTER_FAST && variant != STRATA_ROUTER_PORTABLE))
        return STRATA_E_ARGUMENT;
    if (variant == STRATA_ROUTER_FAST && k <= ROUTER_FAST_MAX_K &&
        detect_isa() == ISA_AVX512VNNI) {
#pragma omp parallel for schedule(static) if (tokens >= ROUTER_PARALLEL_FROM)
        for (int64_t t = 0; t < tokens; t += 16) {
            int group = tokens - t < 16 ? (int)(tokens - t) : 16;
            __mmask16 left = route16(logits + t * experts, group, experts, k, ids + t * k,
                                     weights + t * k);
            route_left(logits, t, group, left, experts, k, ids, weights);
        }
        return STRATA_OK;
    }
    if (variant == STRATA_ROUTER_FAST && k <= ROUTER_FAST_MAX_K && detect_isa() >= ISA_AVX2) {
#pragma omp parallel for schedule(static) if (tokens >= ROUTER_PARALLEL_FROM)
        for (int64_t t = 0; t < tokens; t += 8) {
            int group = tokens - t < 8 ? (int)(tokens - t) : 8;
            unsigned left = route8(logits + t * experts, group, experts, k, ids + t * k,
                                   weights + t * k);
            route_left(logits, t, group, left, experts, k, ids, weights);
        }
        return STRATA_OK;
    }
#pragma omp parallel for schedule(static) if (tokens >= 64)
    for (int64_t t = 0; t < tokens; t++) {
        item best[64];
        route_portable(logits + t * experts, experts, k, best);
        softmax_weights(best, k, ids + t * k, weights + t * k);
    }
    return STRATA_OK;
}
