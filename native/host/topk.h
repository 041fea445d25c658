/* What topk.c shares with router_topk.c: a ranked cell and the original kernel's sorted list. */
#ifndef STRATA_HOST_TOPK_H
#define STRATA_HOST_TOPK_H

#include <stdint.h>

typedef struct { float v; int32_t i; } item;

#pragma GCC visibility push(hidden)

/* The k best of s[0..n) into best[0..k), best first (ties: lower index first; NaN as -inf),
 * each cell inserted where it belongs: the original kernel. */
void old_select(item *best, int k, const float *s, int64_t n);

#pragma GCC visibility pop

#endif
