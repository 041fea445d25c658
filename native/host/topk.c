/* topk: the k best of each row of scores, by the register kernel (a threshold-filtered
 * min-heap), the wide kernel (a sampled threshold, then the cells above it) or the original
 * kernel (a sorted list), in each instruction set; the rows on threads. */

#include "strata_kernels.h"

#include <math.h>
#include <stdlib.h>

#include <immintrin.h>

#include "isa.h"
#include "topk.h"

/* always_inline: inside the AVX2 and AVX-512 scans these compile with VEX encodings too;
 * a call into SSE-encoded code from there pays a transition on every instruction. */
#define HOT static inline __attribute__((always_inline))

/* a ranks below b: smaller value, or the same value and a larger index */
HOT int below(item a, item b) { return a.v < b.v || (a.v == b.v && a.i > b.i); }

HOT float key_of(float v) { return isnan(v) ? -INFINITY : v; }

HOT void sift_down(item *heap, int n, int at) {
    for (;;) {
        int low = at, l = 2 * at + 1, r = l + 1;
        if (l < n && below(heap[l], heap[low])) low = l;
        if (r < n && below(heap[r], heap[low])) low = r;
        if (low == at) return;
        item t = heap[at]; heap[at] = heap[low]; heap[low] = t;
        at = low;
    }
}

/* The min-heap heap[0..k) in descending order, in place. */
static void sort_heap_descending(item *heap, int k) {
    for (int end = k - 1; end > 0; end--) {
        item t = heap[0]; heap[0] = heap[end]; heap[end] = t;
        sift_down(heap, end, 0);
    }
}

HOT void offer(item *heap, int k, float v, int32_t i) {
    item candidate = {v, i};
    if (below(heap[0], candidate)) { heap[0] = candidate; sift_down(heap, k, 0); }
}

__attribute__((target(AVX512)))
static void scan_avx512(item *heap, int k, const float *s, int64_t from, int64_t n) {
    int64_t i = from;
    for (; i + 16 <= n; i += 16) {
        __mmask16 above = _mm512_cmp_ps_mask(_mm512_loadu_ps(s + i), _mm512_set1_ps(heap[0].v),
                                             _CMP_GE_OQ);
        while (above) {
            int lane = __builtin_ctz(above);
            above &= above - 1;
            offer(heap, k, s[i + lane], (int32_t)(i + lane));
        }
    }
    for (; i < n; i++) offer(heap, k, key_of(s[i]), (int32_t)i);
}

__attribute__((target("avx2,fma")))
static void scan_avx2(item *heap, int k, const float *s, int64_t from, int64_t n) {
    int64_t i = from;
    for (; i + 8 <= n; i += 8) {
        __m256 cmp = _mm256_cmp_ps(_mm256_loadu_ps(s + i), _mm256_set1_ps(heap[0].v), _CMP_GE_OQ);
        unsigned above = (unsigned)_mm256_movemask_ps(cmp);
        while (above) {
            int lane = __builtin_ctz(above);
            above &= above - 1;
            offer(heap, k, s[i + lane], (int32_t)(i + lane));
        }
    }
    for (; i < n; i++) offer(heap, k, key_of(s[i]), (int32_t)i);
}

static void scan_baseline(item *heap, int k, const float *s, int64_t from, int64_t n) {
    for (int64_t i = from; i < n; i++) {
        float v = key_of(s[i]);
        if (v >= heap[0].v) offer(heap, k, v, (int32_t)i);
    }
}

/* The k best of s[0..n) by (value, index), into heap[0..k) as a min-heap. */
static void heap_select(item *heap, int k, const float *s, int64_t n) {
    for (int j = 0; j < k; j++) heap[j] = (item){key_of(s[j]), j};
    for (int j = k / 2 - 1; j >= 0; j--) sift_down(heap, k, j);
    switch (detect_isa()) {
    case ISA_AVX512VNNI: scan_avx512(heap, k, s, k, n); break;
    case ISA_AVXVNNI:
    case ISA_AVX2: scan_avx2(heap, k, s, k, n); break;
    default: scan_baseline(heap, k, s, k, n);
    }
}

/* Cell i into out[count] while there is room; every cell counts. */
HOT void collect_one(item *out, int64_t cap, int64_t *count, float key, int64_t i) {
    if (*count < cap) out[*count] = (item){key, (int32_t)i};
    (*count)++;
}

/* The cells from ``from`` with a key at or above the threshold, up to cap, after ``count``
 * collected already (the count is returned in full). */
static int64_t collect_baseline(const float *s, int64_t from, int64_t n, float threshold,
                                item *out, int64_t cap, int64_t count) {
    for (int64_t i = from; i < n; i++)
        if (key_of(s[i]) >= threshold) collect_one(out, cap, &count, key_of(s[i]), i);
    return count;
}

__attribute__((target(AVX512)))
static int64_t collect_avx512(const float *s, int64_t n, float threshold, item *out, int64_t cap) {
    int64_t count = 0, i = 0;
    for (; i + 16 <= n; i += 16) {
        __mmask16 above = _mm512_cmp_ps_mask(_mm512_loadu_ps(s + i), _mm512_set1_ps(threshold),
                                             _CMP_GE_OQ);
        for (; above; above &= above - 1)
            collect_one(out, cap, &count, s[i + __builtin_ctz(above)], i + __builtin_ctz(above));
    }
    return collect_baseline(s, i, n, threshold, out, cap, count);
}

__attribute__((target("avx2,fma")))
static int64_t collect_avx2(const float *s, int64_t n, float threshold, item *out, int64_t cap) {
    int64_t count = 0, i = 0;
    const __m256 at_least = _mm256_set1_ps(threshold);
    for (; i + 16 <= n; i += 16) {
        unsigned above =
            (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(s + i), at_least,
                                                       _CMP_GE_OQ)) |
            (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(s + i + 8), at_least,
                                                       _CMP_GE_OQ)) << 8;
        for (; above; above &= above - 1)
            collect_one(out, cap, &count, s[i + __builtin_ctz(above)], i + __builtin_ctz(above));
    }
    return collect_baseline(s, i, n, threshold, out, cap, count);
}

/* Wide: the threshold that a strided sample puts about 2k cells above, then only the cells
 * at or above it. The result is the same as the heap's; a sample that misjudges falls back. */
static int wide_select(item *heap, int k, const float *s, int64_t n) {
    const int64_t stride = 16;
    int64_t samples = n / stride;
    int want = 2 * k / (int)stride + 1;
    if (samples < 4 * (int64_t)want) { heap_select(heap, k, s, n); return STRATA_OK; }
    float *sample = malloc((size_t)samples * sizeof *sample);
    item *small = malloc((size_t)want * sizeof *small);
    int64_t cap = 8 * (int64_t)k + 4096;
    item *candidates = malloc((size_t)cap * sizeof *candidates);
    if (!sample || !small || !candidates) {
        free(sample); free(small); free(candidates);
        return STRATA_E_NOMEM;
    }
    for (int64_t j = 0; j < samples; j++) sample[j] = s[j * stride];
    heap_select(small, want, sample, samples);
    float threshold = small[0].v;
    enum isa isa = detect_isa();
    int64_t count = isa == ISA_AVX512VNNI ? collect_avx512(s, n, threshold, candidates, cap)
                    : isa >= ISA_AVX2     ? collect_avx2(s, n, threshold, candidates, cap)
                    : collect_baseline(s, 0, n, threshold, candidates, cap, 0);
    /* The vector collects skip NaN, whose key (-inf) a threshold of -inf would take. */
    if (count < k || count > cap || threshold == -INFINITY) {
        heap_select(heap, k, s, n);
    } else {
        for (int j = 0; j < k; j++) heap[j] = candidates[j];
        for (int j = k / 2 - 1; j >= 0; j--) sift_down(heap, k, j);
        for (int64_t j = k; j < count; j++)
            if (below(heap[0], candidates[j])) { heap[0] = candidates[j]; sift_down(heap, k, 0); }
    }
    free(sample); free(small); free(candidates);
    return STRATA_OK;
}

/* Cell c into the sorted list best[0..*have) of at most k, where it belongs. */
HOT void insert_sorted(item *best, int *have, int k, item c) {
    if (*have == k && !below(best[k - 1], c)) return;
    int at = *have < k ? (*have)++ : k - 1;
    while (at > 0 && below(best[at - 1], c)) { best[at] = best[at - 1]; at--; }
    best[at] = c;
}

/* The original kernel: a sorted list, each cell inserted where it belongs. */
void old_select(item *best, int k, const float *s, int64_t n) {
    int have = 0;
    for (int64_t i = 0; i < n; i++) insert_sorted(best, &have, k, (item){key_of(s[i]), (int32_t)i});
}

/* The same list; once it is full, eight cells at a time pass only where one beats its last
 * (a later cell with an equal value ranks below it). */
__attribute__((target("avx2,fma")))
static void old_select_avx2(item *best, int k, const float *s, int64_t n) {
    int have = 0;
    int64_t i = 0;
    for (; i < n && have < k; i++) insert_sorted(best, &have, k, (item){key_of(s[i]), (int32_t)i});
    for (; i + 8 <= n; i += 8) {
        unsigned above = (unsigned)_mm256_movemask_ps(
            _mm256_cmp_ps(_mm256_loadu_ps(s + i), _mm256_set1_ps(best[k - 1].v), _CMP_GT_OQ));
        while (above) {
            int lane = __builtin_ctz(above);
            above &= above - 1;
            insert_sorted(best, &have, k, (item){s[i + lane], (int32_t)(i + lane)});
        }
    }
    for (; i < n; i++) insert_sorted(best, &have, k, (item){key_of(s[i]), (int32_t)i});
}

int strata_topk_variant_for(int64_t n, int prompt_read) {
    /* AMD_HIP.md, "Deep contexts": "Past about 135K cells (and from about 90K cells on a
     * prompt read) the top-k selection runs the wide kernel". */
    return n > 135000 || (prompt_read && n >= 90000) ? STRATA_TOPK_WIDE : STRATA_TOPK_REGISTER;
}

static int topk_one(const float *scores, int64_t n, int k, int32_t *ids, float *values,
                    int variant) {
    if (!scores || !ids || !values || k <= 0 || n < k || n > INT32_MAX) return STRATA_E_ARGUMENT;
    if (variant == STRATA_TOPK_AUTO) variant = strata_topk_variant_for(n, 0);
    item *best = malloc((size_t)k * sizeof *best);
    if (!best) return STRATA_E_NOMEM;
    int status = STRATA_OK;
    switch (variant) {
    case STRATA_TOPK_REGISTER: heap_select(best, k, scores, n); break;
    case STRATA_TOPK_WIDE: status = wide_select(best, k, scores, n); break;
    case STRATA_TOPK_OLD:
        if (detect_isa() >= ISA_AVX2) old_select_avx2(best, k, scores, n);
        else old_select(best, k, scores, n);
        break;
    default: status = STRATA_E_ARGUMENT;
    }
    if (status == STRATA_OK) {
        if (variant != STRATA_TOPK_OLD) sort_heap_descending(best, k);
        for (int j = 0; j < k; j++) { ids[j] = best[j].i; values[j] = scores[best[j].i]; }
    }
    free(best);
    return status;
}

int strata_topk(const float *scores, int64_t queries, int64_t n, int64_t stride, int k,
                int32_t *ids, float *values, int variant) {
    if (queries < 0 || stride < n) return STRATA_E_ARGUMENT;
    int status = STRATA_OK;
#pragma omp parallel for schedule(dynamic) reduction(min : status) if (queries > 1)
    for (int64_t q = 0; q < queries; q++) {
        int row = topk_one(scores + q * stride, n, k, ids + q * k, values + q * k, variant);
        if (row < status) status = row;
    }
    return status;
}
