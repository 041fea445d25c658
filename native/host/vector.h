/* Vector helpers that the AVX2 and AVX-512 variants share: the sum of eight floats, and e^x for
 * the router's softmax weights in eight lanes and in sixteen, from one definition. */
#ifndef STRATA_HOST_VECTOR_H
#define STRATA_HOST_VECTOR_H

#include <immintrin.h>

#include "isa.h"

__attribute__((target("avx2,fma,f16c")))
static inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* e^x for x <= 0, as 2^n * p(r) with n = round(x log2 e) and r = x - n ln 2 (Cephes expf), for
 * the vectors of W bits (_mmW_ intrinsics); ROUND(v) rounds each lane to the nearest integer
 * and SCALE(p, n) is 2^n * p. */
#define VECTOR_EXP(name, isa, vector, W, ROUND, SCALE)                                          \
    __attribute__((target(isa)))                                                               \
    static inline vector name(vector x) {                                                      \
        x = _mm##W##_max_ps(x, _mm##W##_set1_ps(-87.0f));                                      \
        vector n = ROUND(_mm##W##_mul_ps(x, _mm##W##_set1_ps(1.44269504088896341f)));          \
        vector r = _mm##W##_fnmadd_ps(n, _mm##W##_set1_ps(0.693359375f), x);                   \
        r = _mm##W##_fnmadd_ps(n, _mm##W##_set1_ps(-2.12194440e-4f), r);                       \
        vector p = _mm##W##_set1_ps(1.9875691500e-4f);                                         \
        p = _mm##W##_fmadd_ps(p, r, _mm##W##_set1_ps(1.3981999507e-3f));                       \
        p = _mm##W##_fmadd_ps(p, r, _mm##W##_set1_ps(8.3334519073e-3f));                       \
        p = _mm##W##_fmadd_ps(p, r, _mm##W##_set1_ps(4.1665795894e-2f));                       \
        p = _mm##W##_fmadd_ps(p, r, _mm##W##_set1_ps(1.6666665459e-1f));                       \
        p = _mm##W##_fmadd_ps(p, r, _mm##W##_set1_ps(5.0000001201e-1f));                       \
        p = _mm##W##_fmadd_ps(_mm##W##_mul_ps(p, r), r,                                        \
                              _mm##W##_add_ps(r, _mm##W##_set1_ps(1.0f)));                     \
        return SCALE(p, n);                                                                    \
    }

#define ROUND_512(v) _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define SCALE_512(p, n) _mm512_scalef_ps(p, n)
#define ROUND_256(v) _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define SCALE_256(p, n)                                                                        \
    _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(                                    \
                         _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)))

VECTOR_EXP(exp512, AVX512, __m512, 512, ROUND_512, SCALE_512)
VECTOR_EXP(exp256, "avx2,fma", __m256, 256, ROUND_256, SCALE_256)

#endif
