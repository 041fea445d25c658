/* The calls that cuBLASLt and hipBLASLt spell alike but for their prefix, declared once for
 * both: STRATA_LT_CALLS(lt, status) declares, for the prefix lt (cublasLt or hipblasLt) and the
 * library's status type, the handle, the matmul descriptor, the matrix layouts, the
 * preferences, the heuristic and the matmul. Each library's header includes stddef.h and
 * stdint.h and names its types before it expands them. */
#ifndef STRATA_BLASLT_H
#define STRATA_BLASLT_H

#define STRATA_LT_CALLS(lt, status)                                                            \
  status lt##Create(lt##Handle_t *handle);                                                     \
  status lt##Destroy(lt##Handle_t handle);                                                     \
  status lt##MatmulDescCreate(lt##MatmulDesc_t *desc, int computeType, int scaleType);         \
  status lt##MatmulDescDestroy(lt##MatmulDesc_t desc);                                         \
  status lt##MatmulDescSetAttribute(lt##MatmulDesc_t desc, int attr, const void *buf,          \
                                    size_t size);                                              \
  status lt##MatrixLayoutCreate(lt##MatrixLayout_t *layout, int type, uint64_t rows,           \
                                uint64_t cols, int64_t ld);                                    \
  status lt##MatrixLayoutDestroy(lt##MatrixLayout_t layout);                                   \
  status lt##MatmulPreferenceCreate(lt##MatmulPreference_t *pref);                             \
  status lt##MatmulPreferenceDestroy(lt##MatmulPreference_t pref);                             \
  status lt##MatmulPreferenceSetAttribute(lt##MatmulPreference_t pref, int attr,               \
                                          const void *buf, size_t size);                       \
  status lt##MatmulAlgoGetHeuristic(lt##Handle_t handle, lt##MatmulDesc_t desc,                \
                                    lt##MatrixLayout_t a, lt##MatrixLayout_t b,                \
                                    lt##MatrixLayout_t c, lt##MatrixLayout_t d,                \
                                    lt##MatmulPreference_t pref, int requested,                \
                                    lt##MatmulHeuristicResult_t *results, int *returned);      \
  status lt##Matmul(lt##Handle_t handle, lt##MatmulDesc_t desc, const void *alpha,             \
                    const void *a, lt##MatrixLayout_t adesc, const void *b,                    \
                    lt##MatrixLayout_t bdesc, const void *beta, const void *c,                 \
                    lt##MatrixLayout_t cdesc, void *d, lt##MatrixLayout_t ddesc,               \
                    const lt##MatmulAlgo_t *algo, void *workspace, size_t workspaceSize,       \
                    void *stream);

#endif
