/* The part of hipBLASLt (hipblaslt.h) that strata calls through cffi in ABI mode: handle,
 * version, matmul and matrix layout descriptors, preferences, heuristics and the matmul. The
 * algorithm is the library's plain structure; its first four bytes are the solution index
 * (rocblaslt reads "(int*)algo->data"), which is how a table's solution id is given. */
#ifndef STRATA_HIPBLASLT_H
#define STRATA_HIPBLASLT_H

#include <stddef.h>
#include <stdint.h>

#include "strata_blaslt.h"

typedef int hipblasStatus_t;
typedef void *hipblasLtHandle_t;
typedef struct hipblasLtMatmulDescOpaque_st *hipblasLtMatmulDesc_t;
typedef struct hipblasLtMatrixLayoutOpaque_st *hipblasLtMatrixLayout_t;
typedef struct hipblasLtMatmulPreferenceOpaque_st *hipblasLtMatmulPreference_t;
typedef struct {
  uint8_t data[16];
  size_t max_workspace_bytes;
} hipblasLtMatmulAlgo_t;
typedef struct {
  hipblasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  hipblasStatus_t state;
  float wavesCount;
  int reserved[4];
} hipblasLtMatmulHeuristicResult_t;

#define HIPBLAS_STATUS_SUCCESS 0
#define HIPBLAS_COMPUTE_32F 2
#define HIP_R_32F 0
#define HIP_R_16F 2
#define HIPBLAS_OP_N 111
#define HIPBLAS_OP_T 112
#define HIPBLASLT_MATMUL_DESC_TRANSA 0
#define HIPBLASLT_MATMUL_DESC_TRANSB 1
#define HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES 1

hipblasStatus_t hipblasLtGetVersion(hipblasLtHandle_t handle, int *version);
STRATA_LT_CALLS(hipblasLt, hipblasStatus_t)

#endif
