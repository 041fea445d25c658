/* What the host library says of itself (its ABI version and operations) and its threads. */

#include "strata_kernels.h"

#include <omp.h>

int strata_abi_version(void) { return STRATA_KERNEL_ABI_VERSION; }

const char *strata_operations(void) { return "matvec_q8_0,expert_matvec_q8_0,router_topk,topk"; }

int strata_set_threads(int threads) {
    if (threads < 0) return STRATA_E_ARGUMENT;
    omp_set_num_threads(threads == 0 ? omp_get_num_procs() : threads);
    return omp_get_max_threads();
}
