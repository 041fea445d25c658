/* The instruction-set dispatch of the host kernels: which variants this CPU can run (each by
 * its own flags), the best of them, and the one the kernels run with (strata_set_isa). */

#include "strata_kernels.h"

#include <string.h>

#include "isa.h"

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

enum isa detect_isa(void) {
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

const char *strata_isa(void) { return isa_names[detect_isa()]; }
