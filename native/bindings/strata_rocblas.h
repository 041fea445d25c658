/* The part of rocBLAS (rocblas.h) that strata calls through cffi in ABI mode: handle and
 * stream, the version string, rocblas_gemm_ex with a solution index (1-based; 0 or below is
 * the default) and the solutions the library lists for a problem (a beta API the library
 * exports). Handles are opaque pointers, rocblas_status an int. */
#ifndef STRATA_ROCBLAS_H
#define STRATA_ROCBLAS_H

#include <stddef.h>
#include <stdint.h>

typedef int rocblas_status;
typedef struct _rocblas_handle *rocblas_handle;

#define rocblas_status_success 0
#define rocblas_operation_none 111
#define rocblas_operation_transpose 112
#define rocblas_datatype_f16_r 150
#define rocblas_datatype_f32_r 151
#define rocblas_gemm_algo_standard 0
#define rocblas_gemm_algo_solution_index 1
#define rocblas_gemm_flags_none 0

rocblas_status rocblas_create_handle(rocblas_handle *handle);
rocblas_status rocblas_destroy_handle(rocblas_handle handle);
rocblas_status rocblas_set_stream(rocblas_handle handle, void *stream);
rocblas_status rocblas_get_version_string_size(size_t *len);
rocblas_status rocblas_get_version_string(char *buf, size_t len);
const char *rocblas_status_to_string(rocblas_status status);
rocblas_status rocblas_gemm_ex(rocblas_handle handle, int transA, int transB, int m, int n,
                               int k, const void *alpha, const void *a, int aType, int lda,
                               const void *b, int bType, int ldb, const void *beta,
                               const void *c, int cType, int ldc, void *d, int dType, int ldd,
                               int computeType, int algo, int32_t solutionIndex, uint32_t flags);
rocblas_status rocblas_gemm_ex_get_solutions(rocblas_handle handle, int transA, int transB,
                                             int m, int n, int k, const void *alpha,
                                             const void *a, int aType, int lda, const void *b,
                                             int bType, int ldb, const void *beta,
                                             const void *c, int cType, int ldc, void *d,
                                             int dType, int ldd, int computeType, int algo,
                                             uint32_t flags, int *solutions, int *count);

#endif
