// The strata kernel ABI (native/include/strata_kernels.h) as GPU kernels: one translation unit
// for every AMD target (and, as CUDA, for every NVIDIA one), which includes the vendor's
// hardware primitives, what the kernels build on them, and one file per operation, so that a
// target gets one code object (one PTX module a compute capability). Built with clang alone
// (no HIP headers, no ROCm device libraries), so the primitives are clang's builtins.
//
// Per-architecture variants (AMD_HIP.md):
//   int8 dot4   gfx11, gfx12: __builtin_amdgcn_sudot4 (v_dot4_i32_iu8)
//               gfx103x, gfx906: __builtin_amdgcn_sdot4 (no iu8 form there)
//   prompt GEMM gfx11: WMMA, 16 halves per lane; gfx12: WMMA, 8 halves per lane
//               gfx103x, gfx906: FMA on LDS tiles
//   gfx906      wave64; a logical 32-lane warp is half of the wavefront (the compat layer)
// Every kernel runs workgroups of STRATA_BLOCK threads; the launcher reads that from the
// code object's metadata and checks it. With STRATA_EMULATION naming a header, the hardware
// primitives come from it instead (tests/fixtures/hip_emulation.h runs them on the CPU).

#define STRATA_HIP_KERNELS  // the header's host declarations are not ours
#include "strata_kernels.h"

#define STRATA_BLOCK 256
#define WARP 32
#define WARPS_PER_BLOCK (STRATA_BLOCK / WARP)
#ifdef STRATA_EMULATION
// The primitives for threads on the CPU (tests/fixtures/hip_emulation.h), so that the kernels'
// logic is tested where there is no GPU.
#include STRATA_EMULATION
#elif defined(__NVPTX__)
// The same primitives for NVIDIA GPUs, as PTX (the reverse of the page's gfx906 compat layer).
#include "cuda_primitives.h"
#else
#include "hip_primitives.h"
#endif

// What the host reads from the code object without a GPU: the ABI it implements and its
// operations (the kernels below).
EXPORTED_DATA int strata_abi_version = STRATA_KERNEL_ABI_VERSION;
EXPORTED_DATA char strata_operations[] =
    "matvec_q8_0,expert_matvec_q8_0,router_topk,topk,prompt_gemm,read_bytes,expert_pairs_q8_0";

#include "primitives.h"

#include "matvec_q8_0.hip"
#include "expert_matvec_q8_0.hip"
#include "expert_pairs_q8_0.hip"
#include "router_topk.hip"
#include "topk_select.hip"
#include "topk_sample.hip"
#include "topk_filter.hip"
#include "topk.hip"
#include "prompt_gemm.hip"
#include "read_bytes.hip"
