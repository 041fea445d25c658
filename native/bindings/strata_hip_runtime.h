/* The part of the HIP runtime API (hip_runtime_api.h) that strata calls through cffi in ABI
 * mode: device queries, module load and function lookup, launch, memory, streams, events,
 * graphs captured from a stream, and errors. Only the ABI matters here: the handles are
 * opaque pointers and hipError_t an int. hipGetDevicePropertiesR0600 is HIP 6 and later;
 * HIP 5 has only hipGetDeviceProperties. */
#ifndef STRATA_HIP_RUNTIME_H
#define STRATA_HIP_RUNTIME_H

#include <stddef.h>

typedef int hipError_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef struct ihipGraph *hipGraph_t;
typedef struct hipGraphExec *hipGraphExec_t;
typedef struct hipGraphNode *hipGraphNode_t;

hipError_t hipInit(unsigned int flags);
hipError_t hipRuntimeGetVersion(int *runtimeVersion);
const char *hipGetErrorName(hipError_t error);
const char *hipGetErrorString(hipError_t error);

hipError_t hipGetDeviceCount(int *count);
hipError_t hipSetDevice(int device);
hipError_t hipDeviceGetName(char *name, int len, int device);
hipError_t hipDeviceTotalMem(size_t *bytes, int device);
hipError_t hipDeviceGetPCIBusId(char *pciBusId, int len, int device);
hipError_t hipDeviceGetAttribute(int *value, int attr, int device);
hipError_t hipGetDevicePropertiesR0600(void *prop, int device);
hipError_t hipGetDeviceProperties(void *prop, int device);

hipError_t hipModuleLoadData(hipModule_t *module, const void *image);
hipError_t hipModuleUnload(hipModule_t module);
hipError_t hipModuleGetFunction(hipFunction_t *function, hipModule_t module, const char *name);
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                 unsigned int gridDimZ, unsigned int blockDimX,
                                 unsigned int blockDimY, unsigned int blockDimZ,
                                 unsigned int sharedMemBytes, hipStream_t stream,
                                 void **kernelParams, void **extra);

hipError_t hipMalloc(void **ptr, size_t size);
hipError_t hipFree(void *ptr);
hipError_t hipMemcpyHtoDAsync(void *dst, void *src, size_t sizeBytes, hipStream_t stream);
hipError_t hipMemcpyDtoHAsync(void *dst, void *src, size_t sizeBytes, hipStream_t stream);

hipError_t hipStreamCreate(hipStream_t *stream);
hipError_t hipStreamDestroy(hipStream_t stream);
hipError_t hipStreamSynchronize(hipStream_t stream);
hipError_t hipEventCreate(hipEvent_t *event);
hipError_t hipEventDestroy(hipEvent_t event);
hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream);
hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t stop);

#define hipStreamCaptureModeThreadLocal 1
hipError_t hipStreamBeginCapture(hipStream_t stream, int mode);
hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t *graph);
hipError_t hipGraphInstantiate(hipGraphExec_t *exec, hipGraph_t graph, hipGraphNode_t *error_node,
                               char *log, size_t log_size);
hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream);
hipError_t hipGraphExecDestroy(hipGraphExec_t exec);
hipError_t hipGraphDestroy(hipGraph_t graph);

#endif
