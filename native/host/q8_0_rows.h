/* The Q8_0 row dot products (q8_0_rows.c) that matvec_q8_0 and expert_matvec_q8_0 share. */
#ifndef STRATA_HOST_Q8_0_ROWS_H
#define STRATA_HOST_Q8_0_ROWS_H

#include <stdint.h>

#pragma GCC visibility push(hidden)

/* One row's dot product with the activations: the sum over its blocks b of d[b] * xd[b] *
 * dot(w[b], x[b]). */
typedef float (*row_kernel)(const int8_t *, const uint16_t *, const int8_t *, const float *,
                            int64_t);

/* The row kernel of the chosen instruction set, where it is not AVX-512 VNNI. */
row_kernel chosen_row_kernel(void);

/* y[0 .. count) for count (at most four) consecutive rows of w, in AVX-512 VNNI. */
void rows_avx512(const int8_t *w, const uint16_t *d, int64_t count, const int8_t *x,
                 const float *xd, const float *correction, int64_t blocks, float *y);

/* -128 * sum(x_b) * xd[b] for each block of each of `vectors` activation vectors (the
 * AVX-512 rows' correction); NULL when out of memory. */
float *avx512_corrections(const int8_t *xq, const float *xd, int64_t vectors, int64_t blocks);

#pragma GCC visibility pop

#endif
