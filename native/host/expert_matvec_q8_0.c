/* expert_matvec_q8_0, the MoE expert step: the pairs grouped by expert, each chosen expert's
 * rows read once a call, the experts' rows on threads. */

#include "strata_kernels.h"

#include <stdlib.h>

#include "isa.h"
#include "q8_0_rows.h"

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
