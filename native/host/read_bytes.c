/* read_bytes: the machine's read bandwidth, every thread folding its chunks of the buffer. */

#include "strata_kernels.h"

#include <immintrin.h>

#include "isa.h"

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
