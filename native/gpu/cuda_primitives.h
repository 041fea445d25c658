// The hardware primitives of strata_kernels.hip for NVIDIA GPUs, built by clang as CUDA device
// code to PTX without the CUDA headers: the kernel attributes, ids and the grid's size, the
// block barrier, the handover between kernels of a stream, the device fence, the warp
// butterfly shuffle, the warp maximum and minimum (redux.sync, sm_80 and newer), e^x and the
// signed int8 dot4 (dp4a, sm_61 and newer). A CUDA warp is the kernels' 32-lane logical warp,
// so this is the reverse of the reference page's gfx906 compat layer.
#define KERNEL extern "C" __attribute__((global)) __attribute__((launch_bounds(STRATA_BLOCK)))
// A kernel whose registers are capped so that `blocks` workgroups fit on an SM at once.
#define KERNEL_RESIDENT(blocks)                                                             \
  extern "C" __attribute__((global)) __attribute__((launch_bounds(STRATA_BLOCK, blocks)))
#define DEVICE static __attribute__((device)) inline
#define SHARED __attribute__((shared))
#define EXPORTED_DATA extern "C" __attribute__((device)) const

DEVICE unsigned thread_id() { return __nvvm_read_ptx_sreg_tid_x(); }
DEVICE unsigned block_id() { return __nvvm_read_ptx_sreg_ctaid_x(); }
DEVICE unsigned grid_size() { return __nvvm_read_ptx_sreg_nctaid_x(); }
DEVICE void sync_block() { __nvvm_bar_sync(0); }

// Programmatic dependent launch (sm_90 and newer): the next kernel of the stream may start its
// workgroups from now on, and this one waits until the kernel before it has ended and its
// writes are seen. Every kernel calls it before it touches memory; a launch that does not
// allow the overlap makes both return at once.
DEVICE void grid_handover() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
DEVICE void fence_device() { __nvvm_membar_gl(); }

DEVICE int warp_xor(int value, int mask) {
  return __nvvm_shfl_sync_bfly_i32(0xffffffffu, value, mask, 0x1f);
}

DEVICE unsigned warp_max(unsigned value) { return __nvvm_redux_sync_umax(value, 0xffffffffu); }
DEVICE unsigned warp_min(unsigned value) { return __nvvm_redux_sync_umin(value, 0xffffffffu); }

// e^x as 2^(x log2 e): ex2.approx is within 2 ulp, and the callers' arguments are at most 0.
DEVICE float exp_f32(float x) { return __nvvm_ex2_approx_f(x * 1.44269504088896341f); }

DEVICE int dot4(int a, int b, int acc) {
  int sum;
  asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(sum) : "r"(a), "r"(b), "r"(acc));
  return sum;
}
