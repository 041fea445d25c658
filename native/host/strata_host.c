/* The host (CPU) kernels of strata: baseline x86-64 code plus AVX2, AVX-VNNI and AVX-512 VNNI
 * variants chosen at run time, multi-threaded with OpenMP. See strata_kernels.h. */

#include "strata_kernels.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <immintrin.h>
#include <omp.h>

enum isa { ISA_UNSET, ISA_BASELINE, ISA_AVX2, ISA_AVXVNNI, ISA_AVX512VNNI };
static const char *const isa_names[] = {"", "baseline", "avx2", "avxvnni", "avx512vnni"};
static enum isa chosen_isa = ISA_UNSET;

/* Whether this CPU has what the variant's code needs: each by its own flags, since an
 * AVX-512 VNNI CPU may lack AVX-VNNI (Cascade Lake, Ice Lake, Zen 4). */
static int cpu_has(enum isa isa) {
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c");
    switch (isa) {
    case ISA_BASELINE: return 1;
    case ISA_AVX2: return avx2;
    case ISA_AVXVNNI: return avx2 && __builtin_cpu_supports("avxvnni");
    case ISA_AVX512VNNI:
        return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    default: return 0;
    }
}

/* The best variant this CPU can run, what the library starts with. */
static enum isa best_isa(void) {
    enum isa isa = ISA_AVX512VNNI;
    while (isa > ISA_BASELINE && !cpu_has(isa)) isa--;
    return isa;
}

static enum isa detect_isa(void) {
    if (chosen_isa == ISA_UNSET) chosen_isa = best_isa();
    return chosen_isa;
}

int strata_set_isa(const char *name) {
    for (int isa = ISA_BASELINE; isa <= ISA_AVX512VNNI; ++isa) {
        if (name && !strcmp(name, isa_names[isa])) {
            if (!cpu_has((enum isa)isa)) return STRATA_E_ARGUMENT;
            chosen_isa = (enum isa)isa;
            return STRATA_OK;
        }
    }
    return STRATA_E_ARGUMENT;
}

int strata_abi_version(void) { return STRATA_KERNEL_ABI_VERSION; }

const char *strata_operations(void) { return "matvec_q8_0,expert_matvec_q8_0,router_topk,topk"; }

const char *strata_isa(void) { return isa_names[detect_isa()]; }

int strata_set_threads(int threads) {
    if (threads < 0) return STRATA_E_ARGUMENT;
    omp_set_num_threads(threads == 0 ? omp_get_num_procs() : threads);
    return omp_get_max_threads();
}

/* ---- matvec_q8_0 ---------------------------------------------------------------------- */

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exponent = (h >> 10) & 0x1f,
             mantissa = h & 0x3ff, bits;
    if (exponent == 0) {
        if (mantissa == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            exponent = 127 - 15 + 1;
            while (!(mantissa & 0x400)) { mantissa <<= 1; exponent--; }
            bits = sign | (exponent << 23) | ((mantissa & 0x3ff) << 13);
        }
    } else if (exponent == 31) {
        bits = sign | 0x7f800000 | (mantissa << 13);
    } else {
        bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static float row_baseline(const int8_t *w, const uint16_t *d, const int8_t *x, const float *xd,
                          int64_t blocks) {
    float acc = 0.0f;
    for (int64_t b = 0; b < blocks; b++) {
        int32_t sum = 0;
        for (int j = 0; j < STRATA_Q8_BLOCK; j++) sum += (int32_t)w[32 * b + j] * x[32 * b + j];
        acc += half_to_float(d[b]) * xd[b] * (float)sum;
    }
    return acc;
}

__attribute__((target("avx2,fma,f16c")))
static inline __m256i dot_avx2(__m256i w, __m256i x) {
    __m256i ax = _mm256_sign_epi8(x, x), sw = _mm256_sign_epi8(w, x);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sw), _mm256_set1_epi16(1));
}

__attribute__((target("avx2,fma,f16c,avxvnni")))
static inline __m256i dot_avxvnni(__m256i w, __m256i x) {
    __m256i ax = _mm256_sign_epi8(x, x), sw = _mm256_sign_epi8(w, x);
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), ax, sw);
}

__attribute__((target("avx2,fma,f16c")))
static inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#define ROW_256(name, dot)                                                                     \
    __attribute__((target("avx2,fma,f16c,avxvnni")))                                           \
    static float name(const int8_t *w, const uint16_t *d, const int8_t *x, const float *xd,   \
                      int64_t blocks) {                                                        \
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),     \
                         _mm256_setzero_ps()};                                                 \
        int64_t b = 0;                                                                         \
        for (; b + 4 <= blocks; b += 4) {                                                      \
            _mm_prefetch((const char *)(w + 32 * b + 1024), _MM_HINT_T0);                     \
            _mm_prefetch((const char *)(w + 32 * b + 1088), _MM_HINT_T0);                     \
            for (int u = 0; u < 4; u++) {                                                      \
                __m256i wv = _mm256_loadu_si256((const __m256i *)(w + 32 * (b + u)));          \
                __m256i xv = _mm256_loadu_si256((const __m256i *)(x + 32 * (b + u)));          \
                float scale = _cvtsh_ss(d[b + u]) * xd[b + u];                                 \
                acc[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot(wv, xv)),                      \
                                         _mm256_set1_ps(scale), acc[u]);                       \
            }                                                                                  \
        }                                                                                      \
        for (; b < blocks; b++) {                                                              \
            __m256i wv = _mm256_loadu_si256((const __m256i *)(w + 32 * b));                    \
            __m256i xv = _mm256_loadu_si256((const __m256i *)(x + 32 * b));                    \
            acc[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot(wv, xv)),                          \
                                     _mm256_set1_ps(_cvtsh_ss(d[b]) * xd[b]), acc[0]);         \
        }                                                                                      \
        return hsum256(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]),                            \
                                     _mm256_add_ps(acc[2], acc[3])));                          \
    }

ROW_256(row_avx2, dot_avx2)
ROW_256(row_avxvnni, dot_avxvnni)

#define AVX512 "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"

/* AVX-512 VNNI takes unsigned times signed bytes, so the weights go in as w + 128 (one
 * xor) and the extra 128 * sum(x) of each block is taken off through `correction`, which
 * holds -128 * sum(x_b) * xd[b] per block. Four rows at a time: four memory streams per
 * thread keep more reads in flight, and each x load serves them all. */
__attribute__((target(AVX512)))
static void rows_avx512(const int8_t *w, const uint16_t *d, int64_t count, const int8_t *x,
                        const float *xd, const float *correction, int64_t blocks, float *y) {
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    __m512 acc[4][2];
    __m256 fix[4];
    for (int r = 0; r < count; r++) {
        acc[r][0] = acc[r][1] = _mm512_setzero_ps();
        fix[r] = _mm256_setzero_ps();
    }
    int64_t b = 0;
    for (; b + 8 <= blocks; b += 8) {
        __m256 xs = _mm256_loadu_ps(xd + b), cs = _mm256_loadu_ps(correction + b);
        for (int r = 0; r < count; r++) {
            const int8_t *wr = w + r * blocks * 32 + 32 * b;
            for (int line = 0; line < 4; line++)
                _mm_prefetch((const char *)(wr + 8192 + 64 * line), _MM_HINT_T1);
            __m256 ws = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(d + r * blocks + b)));
            fix[r] = _mm256_fmadd_ps(ws, cs, fix[r]);
            __m512 s512 = _mm512_castps256_ps512(_mm256_mul_ps(ws, xs));
            for (int u = 0; u < 4; u++) {
                /* lanes 0-7 take the scale of the pair's first block, 8-15 the second's */
                __m512i lanes = _mm512_set_epi32(2 * u + 1, 2 * u + 1, 2 * u + 1, 2 * u + 1,
                                                 2 * u + 1, 2 * u + 1, 2 * u + 1, 2 * u + 1,
                                                 2 * u, 2 * u, 2 * u, 2 * u, 2 * u, 2 * u,
                                                 2 * u, 2 * u);
                __m512i wv = _mm512_xor_si512(_mm512_loadu_si512(wr + 64 * u), flip);
                __m512i xv = _mm512_loadu_si512(x + 32 * b + 64 * u);
                __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv, xv);
                acc[r][u & 1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums),
                                                _mm512_permutexvar_ps(lanes, s512),
                                                acc[r][u & 1]);
            }
        }
    }
    for (int r = 0; r < count; r++) {
        float total = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][0], acc[r][1])) + hsum256(fix[r]);
        if (b < blocks)
            total += row_avx2(w + r * blocks * 32 + 32 * b, d + r * blocks + b, x + 32 * b,
                              xd + b, blocks - b);
        y[r] = total;
    }
}

typedef float (*row_kernel)(const int8_t *, const uint16_t *, const int8_t *, const float *,
                            int64_t);

/* -128 * sum(x_b) * xd[b] for each block of each of `vectors` activation vectors (the
 * AVX-512 rows' correction); NULL when out of memory. */
static float *avx512_corrections(const int8_t *xq, const float *xd, int64_t vectors,
                                 int64_t blocks) {
    int64_t total = vectors * blocks;
    float *correction = malloc((size_t)(total > 0 ? total : 1) * sizeof *correction);
    if (!correction) return NULL;
    for (int64_t b = 0; b < total; b++) {
        int32_t sum = 0;
        for (int j = 0; j < STRATA_Q8_BLOCK; j++) sum += xq[32 * b + j];
        correction[b] = -128.0f * (float)sum * xd[b];
    }
    return correction;
}

static row_kernel chosen_row_kernel(void) {
    return detect_isa() == ISA_AVXVNNI ? row_avxvnni
         : detect_isa() == ISA_AVX2    ? row_avx2
                                       : row_baseline;
}

int strata_matvec_q8_0(const int8_t *qs, const uint16_t *d, const int8_t *xq, const float *xd,
                       float *y, int64_t rows, int64_t cols) {
    if (!qs || !d || !xq || !xd || !y || rows < 0 || cols < 0 || cols % STRATA_Q8_BLOCK)
        return STRATA_E_ARGUMENT;
    int64_t blocks = cols / STRATA_Q8_BLOCK;
    if (detect_isa() == ISA_AVX512VNNI) {
        float *correction = avx512_corrections(xq, xd, 1, blocks);
        if (!correction) return STRATA_E_NOMEM;
#pragma omp parallel for schedule(static) if (rows * cols > (1 << 20))
        for (int64_t r = 0; r < rows; r += 4)
            rows_avx512(qs + r * cols, d + r * blocks, rows - r < 4 ? rows - r : 4, xq, xd,
                        correction, blocks, y + r);
        free(correction);
        return STRATA_OK;
    }
    row_kernel row = chosen_row_kernel();
#pragma omp parallel for schedule(static) if (rows * cols > (1 << 20))
    for (int64_t r = 0; r < rows; r++) y[r] = row(qs + r * cols, d + r * blocks, xq, xd, blocks);
    return STRATA_OK;
}

/* ---- expert_matvec_q8_0 ---------------------------------------------------------------- */

/* Rows of one expert a thread takes at a time. */
#define EXPERT_CHUNK 64

int strata_expert_matvec_q8_0(const int8_t *qs, const uint16_t *d, const int32_t *ids,
                              const int8_t *xq, const float *xd, float *y, int64_t experts,
                              int64_t tokens, int k, int64_t rows, int64_t cols) {
    if (!qs || !d || !ids || !xq || !xd || !y || experts < 1 || tokens < 0 || k < 1 ||
        rows < 0 || cols < 0 || cols % STRATA_Q8_BLOCK)
        return STRATA_E_ARGUMENT;
    int64_t pairs = tokens * k, blocks = cols / STRATA_Q8_BLOCK;
    for (int64_t p = 0; p < pairs; p++)
        if (ids[p] < 0 || ids[p] >= experts) return STRATA_E_ARGUMENT;
    /* the pairs grouped by expert (a counting sort): expert e's are order[start[e] ..
     * start[e + 1]), and the experts named are named[0 .. distinct) */
    int64_t *start = calloc((size_t)experts + 1, sizeof *start);
    int64_t *order = malloc((size_t)(pairs ? pairs : 1) * sizeof *order);
    int64_t *named = malloc((size_t)experts * sizeof *named);
    float *correction = detect_isa() == ISA_AVX512VNNI
                            ? avx512_corrections(xq, xd, tokens, blocks) : NULL;
    if (!start || !order || !named || (detect_isa() == ISA_AVX512VNNI && !correction)) {
        free(start); free(order); free(named); free(correction);
        return STRATA_E_NOMEM;
    }
    for (int64_t p = 0; p < pairs; p++) start[ids[p] + 1]++;
    int64_t distinct = 0;
    for (int64_t e = 0; e < experts; e++) {
        if (start[e + 1]) named[distinct++] = e;
        start[e + 1] += start[e];
    }
    for (int64_t p = 0; p < pairs; p++) order[start[ids[p]]++] = p;
    for (int64_t e = experts; e > 0; e--) start[e] = start[e - 1];
    start[0] = 0;
    row_kernel row = chosen_row_kernel();
    int64_t chunks = (rows + EXPERT_CHUNK - 1) / EXPERT_CHUNK, items = distinct * chunks;
    /* four rows at a time, each read from memory once and from the cache for every pair */
#pragma omp parallel for schedule(dynamic) if (pairs * rows * cols > (1 << 20))
    for (int64_t i = 0; i < items; i++) {
        int64_t e = named[i / chunks], first = i % chunks * EXPERT_CHUNK;
        int64_t last = first + EXPERT_CHUNK < rows ? first + EXPERT_CHUNK : rows;
        const int8_t *w = qs + e * rows * cols;
        const uint16_t *scales = d + e * rows * blocks;
        for (int64_t r = first; r < last; r += 4) {
            int count = last - r < 4 ? (int)(last - r) : 4;
            for (int64_t q = start[e]; q < start[e + 1]; q++) {
                int64_t p = order[q], t = p / k;
                float out[4];
                if (correction)
                    rows_avx512(w + r * cols, scales + r * blocks, count, xq + t * cols,
                                xd + t * blocks, correction + t * blocks, blocks, out);
                else
                    for (int j = 0; j < count; j++)
                        out[j] = row(w + (r + j) * cols, scales + (r + j) * blocks,
                                     xq + t * cols, xd + t * blocks, blocks);
                for (int j = 0; j < count; j++) y[p * rows + r + j] = out[j];
            }
        }
    }
    free(start); free(order); free(named); free(correction);
    return STRATA_OK;
}

/* ---- top-k ------------------------------------------------------------------------------ */

typedef struct { float v; int32_t i; } item;

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
static void old_select(item *best, int k, const float *s, int64_t n) {
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

/* ---- batched top-k: the rows on threads, each through topk_one ---------------------------- */

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

/* ---- router_topk ------------------------------------------------------------------------ */

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

/* exp for the softmax weights, 16 lanes: 2^n * p(r), r = x - n ln 2 (Cephes expf). */
__attribute__((target(AVX512)))
static inline __m512 exp512(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
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

/* exp for the softmax weights, 8 lanes, x <= 0: 2^n * p(r) as exp512 computes it. */
__attribute__((target("avx2,fma")))
static inline __m256 exp256(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i scale = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n),
                                                       _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
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
            for (int u = 0; u < group; u++) {
                if (!(left >> u & 1)) continue;
                item best[ROUTER_FAST_MAX_K];
                route_portable(logits + (t + u) * experts, experts, k, best);
                softmax_weights(best, k, ids + (t + u) * k, weights + (t + u) * k);
            }
        }
        return STRATA_OK;
    }
    if (variant == STRATA_ROUTER_FAST && k <= ROUTER_FAST_MAX_K && detect_isa() >= ISA_AVX2) {
#pragma omp parallel for schedule(static) if (tokens >= ROUTER_PARALLEL_FROM)
        for (int64_t t = 0; t < tokens; t += 8) {
            int group = tokens - t < 8 ? (int)(tokens - t) : 8;
            unsigned left = route8(logits + t * experts, group, experts, k, ids + t * k,
                                   weights + t * k);
            for (int u = 0; u < group; u++) {
                if (!(left >> u & 1)) continue;
                item best[ROUTER_FAST_MAX_K];
                route_portable(logits + (t + u) * experts, experts, k, best);
                softmax_weights(best, k, ids + (t + u) * k, weights + (t + u) * k);
            }
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

/* ---- read bandwidth --------------------------------------------------------------------- */

__attribute__((target(AVX512)))
static uint64_t read_avx512(const uint8_t *p, int64_t bytes) {
    __m512i a = _mm512_setzero_si512(), b = a, c = a, e = a;
    for (int64_t i = 0; i + 256 <= bytes; i += 256) {
        a = _mm512_xor_si512(a, _mm512_loadu_si512(p + i));
        b = _mm512_xor_si512(b, _mm512_loadu_si512(p + i + 64));
        c = _mm512_xor_si512(c, _mm512_loadu_si512(p + i + 128));
        e = _mm512_xor_si512(e, _mm512_loadu_si512(p + i + 192));
    }
    __m512i all = _mm512_xor_si512(_mm512_xor_si512(a, b), _mm512_xor_si512(c, e));
    uint64_t lanes[8];
    _mm512_storeu_si512(lanes, all);
    return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3] ^ lanes[4] ^ lanes[5] ^ lanes[6] ^ lanes[7];
}

__attribute__((target("avx2")))
static uint64_t read_avx2(const uint8_t *p, int64_t bytes) {
    __m256i a = _mm256_setzero_si256(), b = a, c = a, e = a;
    for (int64_t i = 0; i + 128 <= bytes; i += 128) {
        a = _mm256_xor_si256(a, _mm256_loadu_si256((const __m256i *)(p + i)));
        b = _mm256_xor_si256(b, _mm256_loadu_si256((const __m256i *)(p + i + 32)));
        c = _mm256_xor_si256(c, _mm256_loadu_si256((const __m256i *)(p + i + 64)));
        e = _mm256_xor_si256(e, _mm256_loadu_si256((const __m256i *)(p + i + 96)));
    }
    __m256i all = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, e));
    uint64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, all);
    return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3];
}

static uint64_t read_baseline(const uint8_t *p, int64_t bytes) {
    const uint64_t *words = (const uint64_t *)p;
    uint64_t total = 0;
    for (int64_t i = 0; i < bytes / 8; i++) total ^= words[i];
    return total;
}

uint64_t strata_read_bytes(const void *buffer, int64_t bytes) {
    const int64_t chunk = 1 << 20; /* 1 MiB per task: whole 256-byte steps */
    enum isa isa = detect_isa();
    uint64_t total = 0;
    int64_t chunks = bytes / chunk;
#pragma omp parallel for schedule(static) reduction(^ : total)
    for (int64_t i = 0; i < chunks; i++) {
        const uint8_t *p = (const uint8_t *)buffer + i * chunk;
        total ^= isa == ISA_AVX512VNNI ? read_avx512(p, chunk)
               : isa >= ISA_AVX2       ? read_avx2(p, chunk)
                                       : read_baseline(p, chunk);
    }
    total ^= read_baseline((const uint8_t *)buffer + chunks * chunk, bytes - chunks * chunk);
    return total;
}
