/* matvec_q8_0: y = W x for Q8_0 weights and activations, the rows on threads. */

#include "strata_kernels.h"

#include <stdlib.h>

#include "isa.h"
#include "q8_0_rows.h"

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
