/* The part of cuBLASLt (cublasLt.h) that strata calls through cffi in ABI mode: handle,
 * version, matmul and matrix layout descriptors, preferences, heuristics, algorithm
 * configurations (init, attributes, check) and the matmul. Descriptors are opaque pointers;
 * the algorithm and heuristic result are the library's documented plain structures. */
#ifndef STRATA_CUBLASLT_H
#define STRATA_CUBLASLT_H

#include <stddef.h>
#include <stdint.h>

#include "strata_blaslt.h"

typedef int cublasStatus_t;
typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct cublasLtMatmulDescOpaque_st *cublasLtMatmulDesc_t;
typedef struct cublasLtMatrixLayoutOpaque_st *cublasLtMatrixLayout_t;
typedef struct cublasLtMatmulPreferenceOpaque_st *cublasLtMatmulPreference_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;

#define CUBLAS_STATUS_SUCCESS 0
#define CUBLAS_COMPUTE_32F 68
#define CUDA_R_32F 0
#define CUDA_R_16F 2
#define CUBLAS_OP_N 0
#define CUBLAS_OP_T 1
#define CUBLASLT_MATMUL_DESC_TRANSA 3
#define CUBLASLT_MATMUL_DESC_TRANSB 4
#define CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES 1
#define CUBLASLT_ALGO_CONFIG_ID 0
#define CUBLASLT_ALGO_CONFIG_TILE_ID 1
#define CUBLASLT_ALGO_CONFIG_SPLITK_NUM 2
#define CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME 3
#define CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING 4
#define CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION 5
#define CUBLASLT_ALGO_CONFIG_STAGES_ID 6
#define CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID 7
#define CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID 8

size_t cublasLtGetVersion(void);
const char *cublasLtGetStatusName(cublasStatus_t status);
STRATA_LT_CALLS(cublasLt, cublasStatus_t)
cublasStatus_t cublasLtMatmulAlgoInit(cublasLtHandle_t handle, int computeType, int scaleType,
                                      int aType, int bType, int cType, int dType, int algoId,
                                      cublasLtMatmulAlgo_t *algo);
cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t *algo, int attr,
                                                    const void *buf, size_t size);
cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t *algo, int attr,
                                                    void *buf, size_t size, size_t *written);
cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                       cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                       cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                       const cublasLtMatmulAlgo_t *algo,
                                       cublasLtMatmulHeuristicResult_t *result);

#endif
