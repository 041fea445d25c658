/* The Q8_0 row dot products that matvec_q8_0 and expert_matvec_q8_0 run, in each instruction
 * set: one row at a time (baseline, AVX2, AVX-VNNI) or four (AVX-512 VNNI). */

#include "strata_kernels.h"

#include <stdlib.h>
#include <string.h>

#include <immintrin.h>

#include "isa.h"
#include "q8_0_rows.h"
#include "vector.h"

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

/* AVX-512 VNNI takes unsigned times signed bytes, so the weights go in as w + 128 (one
 * xor) and the extra 128 * sum(x) of each block is taken off through `correction`, which
 * holds -128 * sum(x_b) * xd[b] per block. Four rows at a time: four memory streams per
 * thread keep more reads in flight, and each x load serves them all. */
__attribute__((target(AVX512)))
void rows_avx512(const int8_t *w, const uint16_t *d, int64_t count, const int8_t *x,
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

float *avx512_corrections(const int8_t *xq, const float *xd, int64_t vectors, int64_t blocks) {
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

row_kernel chosen_row_kernel(void) {
    return detect_isa() == ISA_AVXVNNI ? row_avxvnni
         : detect_isa() == ISA_AVX2    ? row_avx2
                                       : row_baseline;
}
