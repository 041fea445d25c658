/* The instruction sets the host kernels have variants for, the one they run with (isa.c), and
 * the target of the AVX-512 variants. Internal to the library, as every header here. */
#ifndef STRATA_HOST_ISA_H
#define STRATA_HOST_ISA_H

enum isa { ISA_UNSET, ISA_BASELINE, ISA_AVX2, ISA_AVXVNNI, ISA_AVX512VNNI };

#define AVX512 "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"

#pragma GCC visibility push(hidden)

/* The variant the kernels run with: the best the CPU has until strata_set_isa names another. */
enum isa detect_isa(void);

#pragma GCC visibility pop

#endif
